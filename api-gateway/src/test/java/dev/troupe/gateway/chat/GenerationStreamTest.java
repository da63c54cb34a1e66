package dev.troupe.gateway.chat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.gateway.http.ApiException;
import dev.troupe.gateway.replicas.ReplicaSelector;
import dev.troupe.protocol.cluster.GenerationRequest;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Cancel;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Command;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Generate;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.GenerationEvent;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.GenerationUpdate;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.LogprobEntry;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Started;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.TokenLogprob;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.UpdatePart;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Usage;
import dev.troupe.protocol.cluster.SamplingParams;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.NotUsed;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.apache.pekko.serialization.SerializationExtension;
import org.apache.pekko.serialization.Serializer;
import org.apache.pekko.serialization.Serializers;
import org.apache.pekko.stream.javadsl.Sink;
import org.apache.pekko.stream.javadsl.Source;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/**
 * The event stream behind both response modes: completion, cancellation when the consumer leaves,
 * timeouts.
 */
class GenerationStreamTest {
  private static final ActorTestKit testKit = ActorTestKit.create();

  @AfterAll
  static void shutdown() {
    testKit.shutdownTestKit();
  }

  private static GenerationRequest request(String id) {
    return GenerationRequest.chat(
        id,
        List.of(Map.of("role", "user", "content", "x")),
        SamplingParams.builder().maxTokens(4).build());
  }

  /**
   * The events of {@code r} on the one {@code worker}, which must acknowledge within {@code wait}.
   */
  private static Source<GenerationEvent, NotUsed> events(
      TestProbe<Command> worker, GenerationRequest r, Duration wait) {
    return GenerationOwner.events(
        testKit.system(),
        ReplicaSelector.Attempts.only(new ReplicaSelector.Replica("m#0", worker.ref())),
        r,
        MigrationSettings.DISABLED.withAttemptTimeout(wait));
  }

  private static Started started() {
    return new Started("m#0", null, 0, 1, null, null);
  }

  @Test
  void endsAfterTheLastUpdateWithoutCancelling() {
    TestProbe<Command> worker = testKit.createTestProbe();
    var result =
        events(worker, request("r1"), Duration.ofSeconds(3)).runWith(Sink.seq(), testKit.system());
    Generate g = worker.expectMessageClass(Generate.class);
    g.replyTo().tell(new GenerationUpdate("r1", started(), List.of(), null));
    g.replyTo().tell(new GenerationUpdate("r1", null, List.of(), new Usage(1, 0, 0)));
    List<GenerationEvent> events = result.toCompletableFuture().join();
    assertEquals(2, events.size());
    assertTrue(((GenerationUpdate) events.get(1)).done());
    worker.expectNoMessage(Duration.ofMillis(200));
  }

  @Test
  void aConsumerThatLeavesCancelsTheRequest() {
    TestProbe<Command> worker = testKit.createTestProbe();
    // take(1): the consumer stops after the first event, as an SSE client that disconnects.
    var result =
        events(worker, request("r2"), Duration.ofSeconds(3))
            .take(1)
            .runWith(Sink.seq(), testKit.system());
    Generate g = worker.expectMessageClass(Generate.class);
    g.replyTo().tell(new GenerationUpdate("r2", started(), List.of(), null));
    result.toCompletableFuture().join();
    assertEquals("r2", worker.expectMessageClass(Cancel.class).requestId());
  }

  @Test
  void aSilentWorkerIsA503() {
    TestProbe<Command> worker = testKit.createTestProbe();
    var first =
        GenerationStream.firstEvent(
            events(worker, request("r3"), Duration.ofMillis(200)), testKit.system());
    worker.expectMessageClass(Generate.class);
    CompletionException e =
        assertThrows(CompletionException.class, () -> first.toCompletableFuture().join());
    ApiException api = assertInstanceOf(ApiException.class, e.getCause());
    assertEquals(503, api.status());
    assertTrue(api.getMessage().contains("retry"), api.getMessage());
    assertEquals("r3", worker.expectMessageClass(Cancel.class).requestId());
  }

  @Test
  void anUpdateSentInPartsIsPassedOnWhole() throws Exception {
    TestProbe<Command> worker = testKit.createTestProbe();
    var result =
        events(worker, request("r4"), Duration.ofSeconds(3)).runWith(Sink.seq(), testKit.system());
    Generate g = worker.expectMessageClass(Generate.class);
    List<LogprobEntry> prompt = new ArrayList<>();
    prompt.add(null); // nothing predicts the first prompt token
    for (int i = 1; i < 200; i++)
      prompt.add(
          new LogprobEntry(
              new TokenLogprob(i, "t" + i, -1.5, 1),
              List.of(new TokenLogprob(i, "t" + i, -1.5, 1))));
    GenerationUpdate first =
        new GenerationUpdate(
            "r4", new Started("m#0", worker.ref(), 0, 200, null, prompt), List.of(), null);
    // as a worker on another node sends an update over Artery's frame: serialized, in 3 slices
    var serialization = SerializationExtension.get(Adapter.toClassic(testKit.system()));
    Serializer serializer = serialization.findSerializerFor(first);
    byte[] bytes = serialization.serialize(first).get();
    String manifest = Serializers.manifestFor(serializer, first);
    int third = bytes.length / 3 + 1;
    for (int from = 0; from < bytes.length; from += third) {
      int end = Math.min(bytes.length, from + third);
      g.replyTo()
          .tell(
              new UpdatePart(
                  "r4",
                  Arrays.copyOfRange(bytes, from, end),
                  end == bytes.length,
                  serializer.identifier(),
                  manifest));
    }
    g.replyTo().tell(new GenerationUpdate("r4", null, List.of(), new Usage(200, 0, 0)));

    List<GenerationEvent> events = result.toCompletableFuture().get(20, TimeUnit.SECONDS);
    assertEquals(2, events.size());
    assertEquals(first, events.get(0));
    assertTrue(((GenerationUpdate) events.get(1)).done());
  }
}
