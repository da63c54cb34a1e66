package dev.troupe.engine.serving;

import static dev.troupe.engine.serving.Driver.tokens;
import static dev.troupe.engine.serving.Driver.usage;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.engine.core.EngineSettings;
import dev.troupe.engine.output.RequestUpdate;
import dev.troupe.protocol.cluster.GenerationRequest;
import dev.troupe.protocol.cluster.SamplingParams;
import dev.troupe.scheduler.SchedulingPolicy;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Prefix caching through the whole engine on the demo model: a request that finds its prefix cached
 * generates exactly the tokens it would have computed from scratch (checked against full
 * recomputation), and reports the cached tokens as vLLM does.
 */
class PrefixCachingEngineTest {
  // 16-token blocks; the prompt is long enough for several full blocks.
  private static final String SYSTEM =
      "You are a careful assistant. Answer briefly, cite the facts you use, and never invent"
          + " numbers. The cluster serves many rollouts that share this system prompt word for word.";

  @BeforeAll
  static void openReference() {
    EngineTest.openReference();
  }

  @AfterAll
  static void closeReference() {
    EngineTest.closeReference();
  }

  private static GenerationRequest request(String id, String text, SamplingParams p) {
    return GenerationRequest.prompt(id, text, p);
  }

  private static Driver engine(boolean caching) {
    return EngineTest.engine(
        EngineSettings.small().withPrefixCaching(caching), SchedulingPolicy.FCFS);
  }

  private static List<RequestUpdate> run(Driver e, GenerationRequest r) {
    assertNull(e.add(r));
    return e.drain().of(r.requestId());
  }

  @Test
  void aHitGeneratesExactlyWhatFullRecomputationDoes() {
    int[] ids = EngineTest.encode(SYSTEM + " Question one?");
    int cacheable = (ids.length - 1) / 16 * 16; // whole blocks, never the last token
    List<Integer> expected = EngineTest.referenceGreedy(ids, 10);
    try (Driver e = engine(true)) {
      List<RequestUpdate> cold =
          run(e, request("cold", SYSTEM + " Question one?", EngineTest.greedy(10)));
      List<RequestUpdate> warm =
          run(e, request("warm", SYSTEM + " Question one?", EngineTest.greedy(10)));
      assertEquals(expected, tokens(cold, 0));
      assertEquals(expected, tokens(warm, 0), "greedy tokens identical with a cache hit");
      assertEquals(0, usage(cold).cachedPromptTokens());
      assertEquals(cacheable, usage(warm).cachedPromptTokens());
      assertEquals(ids.length, usage(warm).promptTokens());
      assertEquals(0, e.engine.core().scheduler().blocks().numUsed(), "every block free again");
      // Another question after the same system prompt shares its leading blocks.
      int[] other = EngineTest.encode(SYSTEM + " A different question, longer than the first?");
      List<RequestUpdate> third =
          run(
              e,
              request(
                  "third",
                  SYSTEM + " A different question, longer than the first?",
                  EngineTest.greedy(6)));
      assertEquals(EngineTest.referenceGreedy(other, 6), tokens(third, 0));
      int shared = 0;
      while (shared < Math.min(ids.length, other.length) && ids[shared] == other[shared]) shared++;
      assertEquals(
          Math.min(shared / 16 * 16, (other.length - 1) / 16 * 16),
          usage(third).cachedPromptTokens());
    }
  }

  @Test
  void underPressureTheOldestPrefixIsEvictedAndRecomputedToTheSameTokens() {
    String[] texts = {
      "Alpha team notes: the rollout workers restart every night, the gateway keeps its routes, and"
          + " the trainer writes a checkpoint after each step so that nothing is lost when a node"
          + " goes down in the middle of a long run of many episodes.",
      "Bravo team notes: reward models are scored on held-out prompts, every score is logged with"
          + " its checkpoint, and a regression of more than two points blocks the release until a"
          + " person has looked at the failing trajectories one by one.",
      "Charlie team notes: the tokenizer files live next to the weights, the chat template is read"
          + " from the tokenizer configuration, and a model without one is refused at load time"
          + " with a message naming the file that should have held it."
    };
    for (int i = 0; i < texts.length; i++) texts[i] = texts[i] + " " + texts[i]; // more blocks
    int[] a = EngineTest.encode(texts[0]);
    int cacheable = (a.length - 1) / 16 * 16;
    assertTrue(cacheable >= 48, "the test needs several full blocks: " + a.length);
    List<Integer> expected = EngineTest.referenceGreedy(a, 8);
    // Room for two of the three requests: the third must evict the first's blocks (LRU).
    int[] b = EngineTest.encode(texts[1]);
    int[] c = EngineTest.encode(texts[2]);
    int blocks = (Math.max(a.length, Math.max(b.length, c.length)) + 8 + 15) / 16 * 2 + 1;
    try (Driver e =
        EngineTest.engine(EngineSettings.small().withNumBlocks(blocks), SchedulingPolicy.FCFS)) {
      assertEquals(expected, tokens(run(e, request("a", texts[0], EngineTest.greedy(8))), 0));
      run(e, request("b", texts[1], EngineTest.greedy(8)));
      run(e, request("c", texts[2], EngineTest.greedy(8)));
      assertTrue(e.engine.core().scheduler().blocks().numEvictions() > 0, "nothing was evicted");
      List<RequestUpdate> again = run(e, request("a2", texts[0], EngineTest.greedy(8)));
      assertEquals(expected, tokens(again, 0), "recomputed after eviction: the same tokens");
      assertTrue(
          usage(again).cachedPromptTokens() < cacheable,
          "a's tail blocks were evicted: " + usage(again).cachedPromptTokens());
      List<RequestUpdate> third = run(e, request("a3", texts[0], EngineTest.greedy(8)));
      assertEquals(expected, tokens(third, 0));
      assertEquals(cacheable, usage(third).cachedPromptTokens(), "cached again in full");
      assertEquals(0, e.engine.core().scheduler().blocks().numUsed(), "every block free again");
    }
  }

  @Test
  void seededSamplingIsIdenticalWithAndWithoutTheCache() {
    SamplingParams p = EngineTest.seeded(2, 7, 8);
    List<Integer> plain0, plain1;
    try (Driver off = engine(false)) {
      List<RequestUpdate> u = run(off, request("a", SYSTEM, p));
      plain0 = tokens(u, 0);
      plain1 = tokens(u, 1);
      List<RequestUpdate> again = run(off, request("b", SYSTEM, p));
      assertEquals(0, usage(again).cachedPromptTokens(), "off: nothing is cached");
    }
    try (Driver on = engine(true)) {
      run(on, request("a", SYSTEM, p));
      List<RequestUpdate> hit = run(on, request("b", SYSTEM, p));
      assertEquals(plain0, tokens(hit, 0));
      assertEquals(plain1, tokens(hit, 1));
      assertEquals(
          (EngineTest.encode(SYSTEM).length - 1) / 16 * 16, usage(hit).cachedPromptTokens());
    }
  }

  @Test
  void aNextTurnHitsTheBlocksOfThePreviousAnswer() {
    try (Driver e = engine(true)) {
      List<RequestUpdate> first = run(e, request("t1", SYSTEM, EngineTest.greedy(40)));
      int[] prompt = EngineTest.encode(SYSTEM);
      List<Integer> answer = tokens(first, 0);
      // The next turn continues token for token (ids from the gateway): prompt, answer, more.
      List<Integer> next = new ArrayList<>();
      for (int t : prompt) next.add(t);
      next.addAll(answer);
      next.add(prompt[0]);
      GenerationRequest turn2 =
          request("t2", "unused: the ids win", EngineTest.greedy(4)).toBuilder()
              .promptTokenIds(next)
              .build();
      List<RequestUpdate> second = run(e, turn2);
      // Every block the first turn computed: its prompt and all but its last answer token.
      int computed = prompt.length + answer.size() - 1;
      assertEquals(computed / 16 * 16, usage(second).cachedPromptTokens());
      assertTrue(computed / 16 > prompt.length / 16, "blocks holding the answer are hits");
      assertEquals(next.size(), usage(second).promptTokens());
      assertEquals(
          EngineTest.referenceGreedy(next.stream().mapToInt(Integer::intValue).toArray(), 4),
          tokens(second, 0));
    }
  }

  @Test
  void gatewayTokenizedIdsAreCheckedLikeTheWorkersOwn() {
    try (Driver e = engine(true)) {
      GenerationRequest outOfVocabulary =
          request("oov", "x", EngineTest.greedy(2)).toBuilder()
              .promptTokenIds(List.of(1, 2, Integer.MAX_VALUE))
              .build();
      assertEquals("prompt", e.add(outOfVocabulary).param(), "out of vocabulary");
      GenerationRequest truncated =
          request("tr", "x", EngineTest.greedy(2)).toBuilder()
              .promptTokenIds(List.of(5, 6, 7, 8, 9))
              .truncatePromptTokens(3)
              .returnTokenIds(true)
              .build();
      List<RequestUpdate> u = run(e, truncated);
      assertEquals(3, usage(u).promptTokens());
      assertEquals(List.of(7, 8, 9), boxed(Driver.started(u).promptTokenIds()));
    }
  }

  private static List<Integer> boxed(int[] ids) {
    List<Integer> out = new ArrayList<>();
    for (int i : ids) out.add(i);
    return out;
  }

  @Test
  void saltsSeparateAndPromptLogprobsAreComputedUncached() {
    try (Driver e = engine(true)) {
      int cacheable = (EngineTest.encode(SYSTEM).length - 1) / 16 * 16;
      run(e, request("plain", SYSTEM, EngineTest.greedy(2)));
      GenerationRequest salted =
          request("s1", SYSTEM, EngineTest.greedy(2)).toBuilder().cacheSalt("tenant-a").build();
      assertEquals(0, usage(run(e, salted)).cachedPromptTokens(), "no hit on unsalted blocks");
      assertEquals(
          cacheable,
          usage(run(e, salted.toBuilder().requestId("s2").build())).cachedPromptTokens());
      assertEquals(
          0,
          usage(run(e, salted.toBuilder().requestId("s3").cacheSalt("tenant-b").build()))
              .cachedPromptTokens());
      SamplingParams withPromptLogprobs =
          SamplingParams.builder()
              .temperature(0.0)
              .maxTokens(2)
              .ignoreEos(true)
              .promptLogprobs(1)
              .build();
      List<RequestUpdate> lp = run(e, request("lp", SYSTEM, withPromptLogprobs));
      assertEquals(0, usage(lp).cachedPromptTokens(), "prompt logprobs need every position");
      RequestUpdate.Started started = Driver.started(lp);
      assertNotNull(started.promptLogprobs());
      assertEquals(EngineTest.encode(SYSTEM).length, started.promptLogprobs().size());
    }
  }
}
