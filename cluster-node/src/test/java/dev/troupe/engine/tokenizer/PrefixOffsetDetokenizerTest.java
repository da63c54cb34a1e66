package dev.troupe.engine.tokenizer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.engine.Tokenizer.IncrementalDetokenizer;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Streaming text equals the full decode, never holds half a character, never revises itself. */
class PrefixOffsetDetokenizerTest {

  @ParameterizedTest
  @ValueSource(strings = {"qwen3", "llama3_2"})
  void randomIdStreamsMatchFullDecode(String model) {
    HfTokenizer tokenizer = (HfTokenizer) TokenizerFixtures.bundle(model).tokenizer();
    Random random = new Random(42);
    // Byte tokens (Ġ-style single bytes >= 0x80) often split a character between ids.
    List<Integer> byteTokens = new ArrayList<>();
    for (int id = 0; id < 256; id++)
      if (isHighByteToken(tokenizer.idToToken(id))) byteTokens.add(id);
    assertFalse(byteTokens.isEmpty());
    for (int round = 0; round < 60; round++) {
      int n = 1 + random.nextInt(40);
      int[] ids = new int[n];
      for (int i = 0; i < n; i++) {
        int kind = random.nextInt(10);
        ids[i] =
            kind < 4
                ? byteTokens.get(random.nextInt(byteTokens.size()))
                : kind < 9
                    ? random.nextInt(tokenizer.vocabSize() - 300)
                    : tokenizer.specialTokenIds().stream().findFirst().orElseThrow();
      }
      for (boolean skip : new boolean[] {false, true})
        assertStreams(tokenizer, new int[0], ids, skip);
    }
  }

  @Test
  void multiByteCharactersSplitAcrossTokensAreHeldBackUntilComplete() {
    HfTokenizer tokenizer = (HfTokenizer) TokenizerFixtures.bundle("qwen3").tokenizer();
    // "😀" is F0 9F 98 80: force one byte token per UTF-8 byte.
    String[] byteLevel = {"ð", "Ł", "ĺ", "Ģ"};
    int[] ids = new int[4];
    for (int i = 0; i < 4; i++) ids[i] = tokenizer.tokenToId(byteLevel[i]).orElseThrow();
    assertEquals("😀", tokenizer.decode(ids, false, true));
    IncrementalDetokenizer detok = tokenizer.newDetokenizer(new int[0], false, true);
    assertEquals("", detok.append(ids[0]));
    assertEquals("", detok.append(ids[1]));
    assertEquals("", detok.append(ids[2]));
    assertEquals("😀", detok.append(ids[3]));
    // An unfinished character at the end is flushed as U+FFFD, as a full decode shows it.
    IncrementalDetokenizer cut = tokenizer.newDetokenizer(new int[0], false, true);
    cut.append(ids[0]);
    cut.append(ids[1]);
    assertEquals("\uFFFD", cut.finish());
  }

  @Test
  void idsInTheModelsPaddedVocabularyProduceNoText() {
    // Qwen3's embedding has 151,936 rows for 151,669 tokenizer ids: a sampled padding id is no
    // text.
    HfTokenizer tokenizer = (HfTokenizer) TokenizerFixtures.bundle("qwen3").tokenizer();
    int padding = tokenizer.vocabSize() + 10;
    int[] hello = tokenizer.encode("Hello world", false);
    IncrementalDetokenizer detok = tokenizer.newDetokenizer(new int[0], true, true);
    StringBuilder out = new StringBuilder(detok.append(hello[0]));
    assertEquals("", detok.append(padding));
    for (int i = 1; i < hello.length; i++) out.append(detok.append(hello[i]));
    out.append(detok.finish());
    assertEquals("Hello world", out.toString());
  }

  @Test
  void promptContextDoesNotLeakIntoOutput() {
    HfTokenizer tokenizer = (HfTokenizer) TokenizerFixtures.bundle("llama3_2").tokenizer();
    int[] prompt =
        tokenizer.encode("<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>", true);
    int[] generated = tokenizer.encode(" Hello there, café 日本語 👍🏽!", false);
    IncrementalDetokenizer detok = tokenizer.newDetokenizer(prompt, true, true);
    StringBuilder out = new StringBuilder();
    for (int id : generated) out.append(detok.append(id));
    out.append(detok.finish());
    assertEquals(" Hello there, café 日本語 👍🏽!", out.toString());
    assertEquals(out.toString(), detok.text());
  }

  private static void assertStreams(HfTokenizer tokenizer, int[] prompt, int[] ids, boolean skip) {
    IncrementalDetokenizer detok = tokenizer.newDetokenizer(prompt, skip, true);
    StringBuilder streamed = new StringBuilder();
    for (int id : ids) {
      String delta = detok.append(id);
      // never half a character: a delta never ends in a high surrogate
      assertTrue(delta.isEmpty() || !Character.isHighSurrogate(delta.charAt(delta.length() - 1)));
      streamed.append(delta);
      assertEquals(streamed.toString(), detok.text(), "text() is what was emitted");
    }
    streamed.append(detok.finish());
    assertEquals(tokenizer.rawDecode(ids, 0, ids.length, skip), streamed.toString());
  }

  /** A byte-level token of one byte >= 0x80 (GPT-2 alphabet: U+00A1..U+00FF, U+0121..U+0143). */
  private static boolean isHighByteToken(String token) {
    if (token == null || token.length() != 1) return false;
    char c = token.charAt(0);
    return (c >= 0xA1 && c <= 0xFF && c != 0xAD) || (c >= 0x121 && c <= 0x143);
  }
}
