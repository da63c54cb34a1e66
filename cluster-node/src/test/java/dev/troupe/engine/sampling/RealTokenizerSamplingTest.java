package dev.troupe.engine.sampling;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.engine.Tokenizer;
import dev.troupe.engine.tokenizer.TokenizerBundle;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Bad words and stop strings with the real (Qwen3) BPE tokenizer and streaming detokenizer. */
class RealTokenizerSamplingTest {

  private static Tokenizer tok;
  private static int vocab;
  private static EosTokens eos;

  @BeforeAll
  static void load() {
    TokenizerBundle bundle = TokenizerBundle.demo();
    tok = bundle.tokenizer();
    vocab = tok.vocabSize();
    eos = new EosTokens(bundle.eosTokenId(), Set.of());
  }

  @Test
  void badWordsAreBannedAtTheStartAndMidText() {
    List<int[]> seqs = BadWords.of(List.of("hello world"), tok, vocab).sequences();
    int[] plain = tok.encode("hello world", false);
    int[] spaced = tok.encode(" hello world", false);
    assertEquals(2, plain.length);
    assertNotEquals(plain[0], spaced[0]);
    assertEquals(2, seqs.size());
    assertArrayEquals(plain, seqs.get(0));
    assertArrayEquals(spaced, seqs.get(1));

    Params p = new Params();
    p.temperature = 0;
    p.badWords = List.of("hello world");
    Sampler s =
        new SamplerFactory(vocab, tok, eos, LogitsProcessorRegistry.none())
            .create(p.build(), new int[0], 0);
    float[] logits = new float[vocab];
    int world = spaced[1]; // " world" ends both forms
    logits[world] = 5f;
    int fallback = tok.encode(" there", false)[0];
    logits[fallback] = 4f;
    assertEquals(world, s.next(logits).token()); // no prefix yet
    s.accept(spaced[0]); // " hello"
    assertEquals(fallback, s.next(logits).token());
  }

  @Test
  void stopStringsSpanRealTokensAndMultiByteCharacters() {
    String answer = "The café is 🙂 open, see you there";
    int[] ids = tok.encode(answer, false);
    Params p = new Params();
    p.stop = List.of("é is 🙂 o", "zzz");
    p.maxTokens = 100;
    ChoiceStops c = new ChoiceStops(p.build(), eos, tok.newDetokenizer(new int[0], true, true));
    StringBuilder streamed = new StringBuilder();
    int used = 0;
    for (int id : ids) {
      StopChecker.Update u = c.append(id);
      used++;
      streamed.append(u.delta());
      assertTrue(answer.startsWith(streamed.toString()));
      if (u.finished()) break;
    }
    assertEquals("The caf", c.text());
    assertEquals("The caf", streamed.toString());
    assertEquals("é is 🙂 o", c.finish().stopReason());
    assertTrue(used < ids.length);

    // EOS: excluded from the text, stop_reason null
    ChoiceStops e =
        new ChoiceStops(new Params().build(), eos, tok.newDetokenizer(new int[0], false, true));
    for (int id : tok.encode("Hi", false)) e.append(id);
    StopChecker.Update last = e.append(eos.eosTokenId());
    assertEquals("Hi", e.text());
    assertEquals(FinishReason.STOP, last.finish().reason());
    assertEquals(null, last.finish().stopReason());
  }
}
