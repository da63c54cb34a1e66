package dev.troupe.engine.reasoning;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.troupe.engine.reasoning.ReasoningParser.Phase;
import dev.troupe.engine.reasoning.ReasoningParser.Split;
import dev.troupe.engine.structured.StructuredFixtures;
import dev.troupe.engine.tokenizer.HfTokenizer;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * {@code qwen3} and {@code deepseek_r1}: whole-output splits as vLLM gives them, and streaming in
 * any chunking reproduces the same split.
 */
class ReasoningParserTest {

  private static final HfTokenizer TOK = StructuredFixtures.tokenizer("qwen3");
  private static final ReasoningParser QWEN3 = ReasoningParser.named("qwen3", TOK);
  private static final ReasoningParser R1 = ReasoningParser.named("deepseek_r1", TOK);

  private static int[] prompt(String text) {
    return TOK.encode(text, false);
  }

  private static final int[] PLAIN =
      prompt("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
  private static final int[] OPEN =
      prompt("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n");
  private static final int[] CLOSED =
      prompt("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n");
  // a previous turn's reasoning must not count: it is before the last special token
  private static final int[] HISTORY =
      prompt("<|im_start|>assistant\n<think>x</think>y<|im_end|>\n<|im_start|>assistant\n");

  @Test
  void qwen3Splits() {
    check(
        QWEN3,
        PLAIN,
        Map.of(),
        "<think>\nplan</think>\n\nanswer",
        new Split("\nplan", "\n\nanswer"));
    check(QWEN3, PLAIN, Map.of(), "<think>cut off", new Split("cut off", null));
    check(QWEN3, PLAIN, Map.of(), "just an answer", new Split(null, "just an answer"));
    check(
        QWEN3,
        PLAIN,
        Map.of(),
        "an answer with </think> inside",
        new Split(null, "an answer with </think> inside"));
    check(QWEN3, PLAIN, Map.of(), "<think></think>x", new Split("", "x"));
    check(QWEN3, PLAIN, Map.of(), "<think>only</think>", new Split("only", null));
    check(QWEN3, HISTORY, Map.of(), "plain", new Split(null, "plain"));
    // the template opened the block (Qwen3-Thinking-2507, Qwen3.5): missing start tag
    check(QWEN3, OPEN, Map.of(), "reasoning</think>answer", new Split("reasoning", "answer"));
    check(QWEN3, OPEN, Map.of(), "still thinking", new Split("still thinking", null));
    // thinking disabled: everything is content
    check(QWEN3, CLOSED, Map.of(), "answer", new Split(null, "answer"));
    check(
        QWEN3,
        PLAIN,
        Map.of("enable_thinking", false),
        "<think>x</think>y",
        new Split(null, "<think>x</think>y"));
  }

  @Test
  void deepseekR1Splits() {
    check(R1, PLAIN, Map.of(), "reasoning</think>answer", new Split("reasoning", "answer"));
    check(R1, PLAIN, Map.of(), "<think>reasoning</think>answer", new Split("reasoning", "answer"));
    check(R1, PLAIN, Map.of(), "no end tag", new Split("no end tag", null));
    check(R1, OPEN, Map.of(), "r</think>", new Split("r", null));
  }

  @Test
  void tokenPhasesFollowTheTags() {
    int think = TOK.tokenToId("<think>").getAsInt();
    int end = TOK.tokenToId("</think>").getAsInt();
    var s = QWEN3.open(PLAIN, Map.of());
    assertEquals(Phase.UNDECIDED, s.phase());
    s.onToken(think);
    assertEquals(Phase.REASONING, s.phase());
    s.onToken(42);
    assertEquals(Phase.REASONING, s.phase());
    s.onToken(end);
    assertEquals(Phase.CONTENT, s.phase());
    var t = QWEN3.open(PLAIN, Map.of());
    t.onToken(42);
    assertEquals(Phase.CONTENT, t.phase());
    assertEquals(Phase.CONTENT, QWEN3.open(CLOSED, Map.of()).phase());
    assertEquals(Phase.REASONING, QWEN3.open(OPEN, Map.of()).phase());
    assertEquals(Phase.REASONING, R1.open(PLAIN, Map.of()).phase());
    assertThrows(IllegalArgumentException.class, () -> ReasoningParser.named("granite", TOK));
  }

  /** The whole-output split, and the same split from random chunkings of the text. */
  private static void check(
      ReasoningParser p, int[] prompt, Map<String, Object> kw, String out, Split want) {
    assertEquals(want, p.split(out, prompt, kw), out);
    Random r = new Random(out.hashCode());
    for (int trial = 0; trial < 30; trial++) {
      var s = p.open(prompt, kw);
      StringBuilder reasoning = new StringBuilder();
      StringBuilder content = new StringBuilder();
      int i = 0;
      while (i < out.length()) {
        int j = Math.min(out.length(), i + 1 + r.nextInt(4));
        var d = s.onText(out.substring(i, j));
        reasoning.append(d.reasoning());
        content.append(d.content());
        i = j;
      }
      var d = s.finish();
      reasoning.append(d.reasoning());
      content.append(d.content());
      assertEquals(want.reasoning() == null ? "" : want.reasoning(), reasoning.toString(), out);
      assertEquals(want.content() == null ? "" : want.content(), content.toString(), out);
    }
  }
}
