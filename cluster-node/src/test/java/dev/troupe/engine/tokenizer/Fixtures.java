package dev.troupe.engine.tokenizer;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The real tokenizer fixtures in {@code ../shared/fixtures/tokenizers}, each loaded once per JVM.
 */
final class Fixtures {
  private static final Map<String, TokenizerBundle> BUNDLES = new ConcurrentHashMap<>();

  private Fixtures() {}

  /** {@code troupe.shared.dir} (set by surefire), else {@code TROUPE_SHARED_DIR} (worktrees). */
  static Path sharedDir() {
    String prop = System.getProperty("troupe.shared.dir");
    if (prop != null && Files.isDirectory(Path.of(prop))) return Path.of(prop);
    String env = System.getenv("TROUPE_SHARED_DIR");
    if (env != null && Files.isDirectory(Path.of(env))) return Path.of(env);
    throw new IllegalStateException(
        "shared fixtures not found: troupe.shared.dir=" + prop + ", TROUPE_SHARED_DIR=" + env);
  }

  static Path tokenizerDir(String model) {
    return sharedDir().resolve("fixtures/tokenizers").resolve(model);
  }

  static TokenizerBundle bundle(String model) {
    return BUNDLES.computeIfAbsent(model, m -> TokenizerBundle.load(tokenizerDir(m)));
  }
}
