package dev.troupe.engine.tokenizer;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.zip.GZIPInputStream;
import org.tukaani.xz.XZInputStream;

/**
 * The real tokenizer fixtures vendored in {@code src/test/resources/tokenizers} (sources, licences
 * and what each exercises: the README there): Qwen3's, Llama 3's and Llama 3.2's {@code
 * tokenizer.json} and {@code tokenizer_config.json}. Each model is unpacked once into {@code
 * target/tokenizer-fixtures/<model>/} (a directory, as {@link TokenizerBundle#load} wants) and
 * every file checked against {@code SHA256SUMS}; a later JVM reuses files whose checksum still
 * matches. Qwen3's are the demo model's own files (main resources), not a second copy.
 */
public final class TokenizerFixtures {
  /** The models with fixtures. */
  public static final List<String> MODELS = List.of("qwen3", "llama3", "llama3_2");

  private static final List<String> FILES = List.of("tokenizer.json", "tokenizer_config.json");
  private static final Map<String, Path> DIRS = new ConcurrentHashMap<>();
  private static final Map<String, TokenizerBundle> BUNDLES = new ConcurrentHashMap<>();

  private TokenizerFixtures() {}

  /**
   * The directory holding {@code model}'s {@code tokenizer.json} and {@code tokenizer_config.json}.
   */
  public static Path dir(String model) {
    return DIRS.computeIfAbsent(model, TokenizerFixtures::unpack);
  }

  /** {@code model}'s tokenizer and template, loaded once per JVM. */
  public static TokenizerBundle bundle(String model) {
    return BUNDLES.computeIfAbsent(model, m -> TokenizerBundle.load(dir(m)));
  }

  private static Path unpack(String model) {
    if (!MODELS.contains(model))
      throw new IllegalArgumentException("no tokenizer fixture " + model + "; have " + MODELS);
    Map<String, String> sums = checksums();
    try {
      Path dir = Files.createDirectories(root().resolve(model));
      for (String file : FILES) {
        Path target = dir.resolve(file);
        String want = sums.get(model + "/" + file);
        if (Files.isRegularFile(target) && sha256(target).equals(want)) continue;
        // Unpacked beside the target and moved into place: concurrent JVMs never see half a file.
        Path part = Files.createTempFile(dir, file, ".part");
        try {
          try (InputStream in = compressed(model, file)) {
            Files.copy(in, part, StandardCopyOption.REPLACE_EXISTING);
          }
          String got = sha256(part);
          if (!got.equals(want))
            throw new IllegalStateException(
                model + "/" + file + ": sha256 " + got + ", SHA256SUMS says " + want);
          Files.move(part, target, StandardCopyOption.REPLACE_EXISTING);
        } finally {
          Files.deleteIfExists(part);
        }
      }
      return dir;
    } catch (IOException e) {
      throw new UncheckedIOException("cannot unpack tokenizer fixture " + model, e);
    }
  }

  private static InputStream compressed(String model, String file) throws IOException {
    if (model.equals("qwen3"))
      return new GZIPInputStream(resource("/dev/troupe/engine/demo/" + file + ".gz"), 1 << 16);
    return new XZInputStream(resource("/tokenizers/" + model + "/" + file + ".xz"));
  }

  private static InputStream resource(String name) throws IOException {
    InputStream in = TokenizerFixtures.class.getResourceAsStream(name);
    if (in == null) throw new IOException("missing test resource " + name);
    return in;
  }

  /** {@code SHA256SUMS}: {@code <model>/<file>} to the sha256 of the uncompressed file. */
  private static Map<String, String> checksums() {
    Map<String, String> sums = new LinkedHashMap<>();
    try (InputStream in = resource("/tokenizers/SHA256SUMS")) {
      for (String line : new String(in.readAllBytes(), StandardCharsets.UTF_8).split("\n")) {
        String[] parts = line.trim().split("\\s+");
        if (parts.length == 2) sums.put(parts[1], parts[0]);
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return sums;
  }

  /** {@code target/tokenizer-fixtures} of this module, or a temporary folder outside a build. */
  private static Path root() {
    try {
      Path classes =
          Path.of(
              TokenizerFixtures.class.getProtectionDomain().getCodeSource().getLocation().toURI());
      if (Files.isDirectory(classes)) return classes.getParent().resolve("tokenizer-fixtures");
    } catch (URISyntaxException | RuntimeException e) {
      // fall through: a jar or an unusual class loader
    }
    return Path.of(System.getProperty("java.io.tmpdir"), "troupe-tokenizer-fixtures");
  }

  private static String sha256(Path file) throws IOException {
    MessageDigest digest;
    try {
      digest = MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
    try (InputStream in = Files.newInputStream(file)) {
      byte[] buf = new byte[1 << 16];
      for (int n; (n = in.read(buf)) > 0; ) digest.update(buf, 0, n);
    }
    return HexFormat.of().formatHex(digest.digest());
  }
}
