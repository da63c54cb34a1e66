package dev.troupe.engine.template;

import dev.troupe.engine.tokenizer.TokenizerFixtures;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** Locates the tokenizer fixtures and reads their special tokens as transformers does. */
final class TemplateFixtures {
  private TemplateFixtures() {}

  static Path tokenizerDir(String model) {
    return TokenizerFixtures.dir(model);
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
