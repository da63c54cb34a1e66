package dev.troupe.engine.template;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** Locates ../shared tokenizer fixtures and reads their special tokens as transformers does. */
final class TemplateFixtures {
  private TemplateFixtures() {}

  static Path tokenizerDir(String model) {
    String prop = System.getProperty("troupe.shared.dir");
    Path shared = prop != null && Files.isDirectory(Path.of(prop)) ? Path.of(prop) : null;
    if (shared == null && System.getenv("TROUPE_SHARED_DIR") != null)
      shared = Path.of(System.getenv("TROUPE_SHARED_DIR"));
    if (shared == null || !Files.isDirectory(shared))
      throw new IllegalStateException(
          "shared fixtures not found (troupe.shared.dir / TROUPE_SHARED_DIR)");
    return shared.resolve("fixtures/tokenizers").resolve(model);
  }

  static Map<String, Object> specialTokens(Map<String, Object> config) {
    Map<String, Object> out = new LinkedHashMap<>();
    for (String attr :
        List.of(
            "bos_token",
            "eos_token",
            "unk_token",
            "sep_token",
            "pad_token",
            "cls_token",
            "mask_token",
            "additional_special_tokens")) {
      Object v = config.get(attr);
      if (v instanceof Map<?, ?> m) v = m.get("content");
      if (v != null) out.put(attr, v);
    }
    return out;
  }
}
