package dev.troupe.training;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.engine.Tokenizer;
import dev.troupe.engine.tokenizer.TokenizerBundle;
import dev.troupe.protocol.Json;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Trajectory rendering and masking with the real Qwen3 tokenizer and a ChatML template. */
class TrajectoryTokenizerTest {
  static Tokenizer tok;
  static TrajectoryTokenizer tt;
  static int imEnd;

  @BeforeAll
  static void load() {
    tok = TokenizerBundle.demo().tokenizer();
    tt = new TrajectoryTokenizer(tok, new ChatMlTemplate());
    imEnd = tok.tokenToId("<|im_end|>").getAsInt();
  }

  static JsonNode json(String s) throws Exception {
    return Json.mapper().readTree(s.replace('\'', '"'));
  }

  /** A choice whose logprobs name tokens as token_id:N. */
  static String choice(int[] ids, double[] lps, String content) {
    StringBuilder sb =
        new StringBuilder(
            "{'finish_reason':'stop','index':0,'message':{'role':'assistant','content':'");
    sb.append(content).append("'},'logprobs':{'content':[");
    for (int i = 0; i < ids.length; i++) {
      if (i > 0) sb.append(',');
      sb.append("{'token':'token_id:")
          .append(ids[i])
          .append("','logprob':")
          .append(lps[i])
          .append('}');
    }
    return sb.append("]}}").toString();
  }

  @Test
  void splicesSampledIdsAndMasksOnlyThem() throws Exception {
    int[] sampled = concat(tok.encode("Four.", false), new int[] {imEnd});
    double[] lps = new double[sampled.length];
    for (int i = 0; i < lps.length; i++) lps[i] = -0.1 * (i + 1);
    JsonNode t =
        json(
            "{'reward':1,'messages_and_choices':[{'role':'user','content':'2+2?'},"
                + choice(sampled, lps, "Four.")
                + ",{'role':'user','content':'dropped: after the last choice'}]}");
    List<TokenizedHistory> hs = tt.tokenize(t);
    assertEquals(1, hs.size());
    TokenizedHistory h = hs.get(0);
    int[] prompt = tok.encode("<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n", false);
    assertArrayEquals(concat(prompt, sampled), h.tokens());
    for (int i = 0; i < prompt.length; i++) {
      assertFalse(h.trainable()[i]);
      assertTrue(Double.isNaN(h.logprobs()[i]));
    }
    for (int i = 0; i < sampled.length; i++) {
      assertTrue(h.trainable()[prompt.length + i]);
      assertEquals(lps[i], h.logprobs()[prompt.length + i]);
    }
  }

  @Test
  void reasoningIsTrainedAsTheModelsOwnTokens() throws Exception {
    // a served answer with a reasoning parser: the <think> text is in reasoning_content, not in
    // content, but logprobs.content lists every sampled token, tags included
    int[] sampled =
        concat(tok.encode("<think>\nadd them\n</think>\n\nFour.", false), new int[] {imEnd});
    double[] lps = new double[sampled.length];
    for (int i = 0; i < lps.length; i++) lps[i] = -0.05 * (i + 1);
    String c =
        choice(sampled, lps, "Four.")
            .replace(
                "'content':'Four.'}",
                "'content':'Four.','reasoning_content':'add them','reasoning':'add them'}");
    JsonNode t =
        json("{'reward':1,'messages_and_choices':[{'role':'user','content':'2+2?'}," + c + "]}");
    TokenizedHistory h = tt.tokenize(t).get(0);
    int[] prompt = tok.encode("<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n", false);
    assertArrayEquals(concat(prompt, sampled), h.tokens());
    assertEquals(sampled.length, h.numTrainable(), "the reasoning tokens are trained too");
    for (int i = 0; i < sampled.length; i++) assertEquals(lps[i], h.logprobs()[prompt.length + i]);
  }

  @Test
  void multiTurnKeepsEarlierChoicesAndDoesNotRepeatEndOfTurn() throws Exception {
    int[] first = concat(tok.encode("Hi", false), new int[] {imEnd});
    int[] second = tok.encode("Bye", false); // stopped by length: no end token
    JsonNode t =
        json(
            "{'reward':0,'messages_and_choices':[{'role':'user','content':'a'},"
                + choice(first, new double[] {-1, -2}, "Hi")
                + ",{'role':'user','content':'b'},"
                + choice(second, new double[second.length], "Bye")
                + "]}");
    TokenizedHistory h = tt.tokenize(t).get(0);
    int[] expected =
        concat(
            tok.encode("<|im_start|>user\na<|im_end|>\n<|im_start|>assistant\n", false),
            first,
            tok.encode("\n<|im_start|>user\nb<|im_end|>\n<|im_start|>assistant\n", false),
            second);
    assertArrayEquals(expected, h.tokens());
    assertEquals(first.length + second.length, h.numTrainable());
  }

  @Test
  void vocabularyTokensAndContentFallback() throws Exception {
    int[] ids = tok.encode("hello world", false);
    String entries =
        "{'finish_reason':'stop','message':{'role':'assistant','content':'hello world'},"
            + "'logprobs':{'content':[{'token':'"
            + tok.idToToken(ids[0])
            + "','logprob':-0.5},{'token':'"
            + tok.idToToken(ids[1])
            + "','logprob':-0.25}]}}";
    TokenizedHistory h =
        tt.tokenize(
                json(
                    "{'reward':1,'messages_and_choices':[{'role':'user','content':'x'},"
                        + entries
                        + "]}"))
            .get(0);
    assertEquals(-0.25, h.logprobs()[h.length() - 1]);
    assertEquals(ids[1], h.tokens()[h.length() - 1]);

    // unresolvable token strings: the content is tokenized, logprobs unknown
    String bad =
        "{'finish_reason':'stop','message':{'role':'assistant','content':'hello world'},"
            + "'logprobs':{'content':[{'token':'not a vocab entry','logprob':-0.5}]}}";
    TokenizedHistory f =
        tt.tokenize(
                json(
                    "{'reward':1,'messages_and_choices':[{'role':'user','content':'x'},"
                        + bad
                        + "]}"))
            .get(0);
    assertEquals(ids.length, f.numTrainable());
    assertTrue(Double.isNaN(f.logprobs()[f.length() - 1]));
  }

  @Test
  void choicesWithoutLogprobsAreContextAndAdditionalHistoriesAreSeparate() throws Exception {
    int[] s = tok.encode("ok", false);
    JsonNode t =
        json(
            "{'reward':1,'messages_and_choices':[{'role':'user','content':'x'},"
                + "{'finish_reason':'stop','message':{'role':'assistant','content':'no logprobs'}}],"
                + "'additional_histories':[{'messages_and_choices':[{'role':'user','content':'y'},"
                + choice(s, new double[s.length], "ok")
                + "],'tools':[{'type':'function','function':{'name':'f'}}]}]}");
    List<TokenizedHistory> hs = tt.tokenize(t);
    assertEquals(1, hs.size()); // the main history has nothing to train
    int[] prompt =
        tok.encode(
            "<|im_start|>system\ntools: 1<|im_end|>\n<|im_start|>user\ny<|im_end|>\n<|im_start|>assistant\n",
            false);
    assertArrayEquals(concat(prompt, s), hs.get(0).tokens());
  }

  static int[] concat(int[]... parts) {
    int n = 0;
    for (int[] p : parts) n += p.length;
    int[] out = new int[n];
    int o = 0;
    for (int[] p : parts) {
      System.arraycopy(p, 0, out, o, p.length);
      o += p.length;
    }
    return out;
  }
}
