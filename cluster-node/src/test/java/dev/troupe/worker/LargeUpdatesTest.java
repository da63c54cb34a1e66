package dev.troupe.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.protocol.cluster.ModelWorkerProtocol.ChoiceUpdate;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.GenerationEvent;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.GenerationUpdate;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.LogprobEntry;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Started;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.TokenLogprob;
import java.util.ArrayList;
import java.util.List;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.apache.pekko.serialization.SerializationExtension;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/**
 * The size estimate that decides which updates are measured errs high (it may be off by less than 2
 * before an update over the frame would go unmeasured), and a requester on the same node gets even
 * an update over the frame whole. Splitting across nodes: deploy's LargeReplyAcrossNodesTest.
 */
class LargeUpdatesTest {
  private static final ActorTestKit testKit =
      ActorTestKit.create(
          com.typesafe.config.ConfigFactory.parseString(
                  "pekko.remote.artery.advanced.maximum-large-frame-size = 64KiB")
              .withFallback(com.typesafe.config.ConfigFactory.load()));

  @AfterAll
  static void shutdown() {
    testKit.shutdownTestKit();
  }

  private static List<LogprobEntry> entries(int n, int alternatives, String token) {
    List<LogprobEntry> out = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      List<TokenLogprob> top = new ArrayList<>();
      for (int k = 1; k <= alternatives; k++)
        top.add(new TokenLogprob(151_000 + k, token, -12.345678901234, k));
      out.add(new LogprobEntry(new TokenLogprob(151_000, token, -0.123456789, 123_456), top));
    }
    return out;
  }

  private static int serialized(GenerationUpdate u) {
    return SerializationExtension.get(Adapter.toClassic(testKit.system()))
        .serialize(u)
        .get()
        .length;
  }

  @Test
  void theEstimateIsNeverBelowTheSerializedSize() {
    for (String token : List.of("", "a", "Ġhello", "é".repeat(40))) {
      List<LogprobEntry> prompt = new ArrayList<>();
      prompt.add(null);
      prompt.addAll(entries(300, 20, token));
      List<Integer> ids = new ArrayList<>();
      for (int i = 0; i < 301; i++) ids.add(151_000 + i);
      GenerationUpdate first =
          new GenerationUpdate(
              "r", new Started("demo#0", null, 7, 301, ids, prompt), List.of(), null);
      List<ChoiceUpdate> choices = new ArrayList<>();
      for (int c = 0; c < 64; c++)
        choices.add(
            new ChoiceUpdate(
                c, token, List.of(151_000), entries(1, 20, token), null, null, null, List.of()));
      GenerationUpdate step = new GenerationUpdate("r", null, choices, null);
      for (GenerationUpdate u : List.of(first, step)) {
        int size = serialized(u);
        long estimate = LargeUpdates.estimate(u);
        assertTrue(estimate >= size, "token '" + token + "': " + estimate + " < " + size);
      }
    }
  }

  @Test
  void aRequesterOnThisNodeGetsALargeUpdateWhole() {
    TestProbe<GenerationEvent> requester = testKit.createTestProbe();
    List<LogprobEntry> prompt = new ArrayList<>();
    prompt.add(null);
    prompt.addAll(entries(300, 20, "hello"));
    GenerationUpdate u =
        new GenerationUpdate(
            "r", new Started("demo#0", null, 0, 301, null, prompt), List.of(), null);
    assertTrue(serialized(u) > 64 * 1024);
    new LargeUpdates(testKit.system()).send(requester.ref(), u);
    assertEquals(u, requester.receiveMessage());
  }
}
