package dev.troupe.engine.tokenizer;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InputStream;
import java.text.Normalizer;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Exact Hugging Face ids for the real qwen3, llama3 and llama3_2 tokenizers on ~300 varied strings.
 *
 * <p>Origin of the expected values: {@code tools/tokenizer-golden/generate.mjs}, run with the npm
 * package {@code @huggingface/tokenizers} (Hugging Face's JS port of tokenizers, pinned in the lock
 * file) over the vendored fixtures ({@link TokenizerFixtures}); the output is committed as {@code
 * golden-<model>.json} next to this test.
 */
class HfTokenizerGoldenTest {

  @ParameterizedTest
  @ValueSource(strings = {"qwen3", "llama3", "llama3_2"})
  void encodesAndDecodesExactlyAsHuggingFace(String model) throws IOException {
    JsonNode golden = golden(model);
    assertTrue(golden.get("origin").asText().contains("@huggingface/tokenizers"));
    HfTokenizer tokenizer = (HfTokenizer) TokenizerFixtures.bundle(model).tokenizer();
    assertEquals(
        golden.get("cleanUpTokenizationSpaces").asBoolean(), tokenizer.cleanUpTokenizationSpaces());
    int cases = 0;
    for (JsonNode c : golden.get("cases")) {
      String text = c.get("text").asText();
      String where = model + " " + quoted(text);
      int[] ids = ints(c.get("ids"));
      int[] idsSpecial = ints(c.get("idsSpecial"));
      assertArrayEquals(ids, tokenizer.encode(text, false), where);
      assertArrayEquals(idsSpecial, tokenizer.encode(text, true), where + " (special)");
      assertEquals(c.get("decoded").asText(), tokenizer.decode(ids, false, true), where);
      assertEquals(c.get("decodedSkip").asText(), tokenizer.decode(idsSpecial, true, true), where);
      // Byte-level BPE is lossless up to the normalizer (NFC for Qwen3, none for Llama 3).
      String expectedRoundTrip =
          model.equals("qwen3") ? Normalizer.normalize(text, Normalizer.Form.NFC) : text;
      assertEquals(expectedRoundTrip, tokenizer.rawDecode(ids, 0, ids.length, false), where);
      cases++;
    }
    assertTrue(cases >= 300, "only " + cases + " cases");
  }

  private static JsonNode golden(String model) throws IOException {
    try (InputStream in =
        HfTokenizerGoldenTest.class.getResourceAsStream("golden-" + model + ".json")) {
      return new ObjectMapper().readTree(in);
    }
  }

  private static int[] ints(JsonNode array) {
    int[] out = new int[array.size()];
    for (int i = 0; i < out.length; i++) out[i] = array.get(i).asInt();
    return out;
  }

  private static String quoted(String s) {
    return '"' + (s.length() > 60 ? s.substring(0, 60) + "…" : s).replace("\n", "\\n") + '"';
  }
}
