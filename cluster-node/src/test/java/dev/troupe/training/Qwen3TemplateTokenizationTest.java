package dev.troupe.training;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.troupe.engine.ChatTemplate;
import dev.troupe.engine.Tokenizer;
import dev.troupe.engine.tokenizer.TokenizerBundle;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * With the demo model's real Qwen3 chat template: the tokens in front of the sampled ones are
 * exactly the prompt the sampler saw (generation prompt), with and without a sampled think block.
 */
class Qwen3TemplateTokenizationTest {
  final TokenizerBundle bundle = TokenizerBundle.demo();
  final Tokenizer tok = bundle.tokenizer();
  final ChatTemplate template = bundle.chatTemplate();

  int[] prompt(boolean thinking) {
    String text =
        template.render(
            new ChatTemplate.Input(
                List.of(Map.of("role", "user", "content", "2+2?")),
                null,
                null,
                true,
                false,
                Map.of("enable_thinking", thinking)));
    return tok.encode(text, false);
  }

  int[] tokens(int[] sampled) throws Exception {
    double[] lps = new double[sampled.length];
    String t =
        "{'reward':1,'messages_and_choices':[{'role':'user','content':'2+2?'},"
            + TrajectoryTokenizerTest.choice(sampled, lps, "x")
            + "]}";
    return new TrajectoryTokenizer(tok, template)
        .tokenize(TrajectoryTokenizerTest.json(t))
        .get(0)
        .tokens();
  }

  @Test
  void sampledAnswerFollowsTheNonThinkingGenerationPrompt() throws Exception {
    int imEnd = tok.tokenToId("<|im_end|>").getAsInt();
    int[] sampled = TrajectoryTokenizerTest.concat(tok.encode("4", false), new int[] {imEnd});
    // a model sampled without thinking saw the empty think block in its generation prompt
    assertArrayEquals(TrajectoryTokenizerTest.concat(prompt(false), sampled), tokens(sampled));
  }

  @Test
  void sampledThinkBlockReplacesTheTemplatesEmptyOne() throws Exception {
    int think = tok.tokenToId("<think>").getAsInt();
    int[] sampled =
        TrajectoryTokenizerTest.concat(
            new int[] {think}, tok.encode("\nsum\n</think>\n\n4", false));
    int[] t = tokens(sampled);
    assertArrayEquals(TrajectoryTokenizerTest.concat(prompt(true), sampled), t);
    assertEquals(think, t[prompt(true).length]);
  }
}
