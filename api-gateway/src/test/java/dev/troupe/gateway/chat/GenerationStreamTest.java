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
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Started;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Usage;
import dev.troupe.protocol.cluster.SamplingParams;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletionException;
import org.apache.pekko.NotUsed;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
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
}
