package dev.troupe.worker;

import static dev.troupe.worker.ModelWorkerKvTransferTest.ENGINES;
import static dev.troupe.worker.ModelWorkerKvTransferTest.GREEDY;
import static dev.troupe.worker.ModelWorkerKvTransferTest.blocksUsed;
import static dev.troupe.worker.ModelWorkerKvTransferTest.kit;
import static dev.troupe.worker.ModelWorkerKvTransferTest.prefill;
import static dev.troupe.worker.ModelWorkerKvTransferTest.prompt;
import static dev.troupe.worker.ModelWorkerKvTransferTest.request;
import static dev.troupe.worker.ModelWorkerKvTransferTest.run;
import static dev.troupe.worker.ModelWorkerKvTransferTest.spawn;
import static dev.troupe.worker.ModelWorkerKvTransferTest.tokens;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.engine.core.EngineSettings;
import dev.troupe.protocol.cluster.KvHandle;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.*;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A prefill node killed in the middle of a KV transfer: two actor systems (two nodes, each with its
 * own KV transfer server); the decode replica's pull goes through {@link CutTransferProxy}, which
 * lets 2 of the prompt's 5 blocks through, then the prefill node's actor system is terminated. With
 * {@code load-failure-policy = fail} the decode request fails naming the transfer and what arrived
 * (503: run both halves again) and none of the decode replica's blocks stay held; with {@code
 * recompute} it computes its prompt itself and generates what one replica does.
 */
class ModelWorkerKvCutTest {
  private static final Duration WAIT = Duration.ofSeconds(60);

  @ParameterizedTest
  @ValueSource(strings = {"fail", "recompute"})
  void aPrefillNodeKilledMidTransferFollowsTheLoadFailurePolicy(String policy) throws Exception {
    ActorTestKit decodeNode = kit(policy);
    ActorTestKit prefillNode = kit(policy);
    boolean prefillAlive = true;
    try {
      ActorRef<Command> reference = spawn(decodeNode, "demo#0", EngineSettings.small());
      ActorRef<Command> d = spawn(decodeNode, "demo#2", EngineSettings.small());
      ActorRef<Command> p = spawn(prefillNode, "demo#1", EngineSettings.small());
      List<Integer> ids = prompt(70); // 69 positions to pull: 5 blocks of 16
      List<List<Integer>> expected =
          tokens(run(decodeNode, reference, request("ref", ids, GREEDY)));
      int before = blocksUsed(decodeNode, d);
      long importedBefore = ENGINES.get("demo#2").core().importedBlocks();
      KvHandle h = prefill(prefillNode, p, "pre", ids);
      try (CutTransferProxy proxy = new CutTransferProxy(h.remoteHost(), h.remotePort(), 2)) {
        KvHandle viaProxy =
            new KvHandle(
                h.remoteEngineId(),
                h.remoteBlockIds(),
                "127.0.0.1",
                proxy.port(),
                h.remoteRequestId(),
                1);
        TestProbe<GenerationEvent> events = decodeNode.createTestProbe();
        d.tell(
            new Generate(
                request("dec", ids, GREEDY).withKvTransfer(viaProxy.toRemotePrefill()),
                events.ref()));
        assertTrue(proxy.cut.await(60, TimeUnit.SECONDS), "2 blocks reached the decode side");
        prefillNode.shutdownTestKit(); // the prefill node dies mid-transfer
        prefillAlive = false;
        assertTrue(proxy.closed.await(60, TimeUnit.SECONDS), "its connection ended with it");
        List<GenerationEvent> got = new ArrayList<>();
        while (got.isEmpty()
            || !(got.get(got.size() - 1) instanceof Failed
                || ((GenerationUpdate) got.get(got.size() - 1)).done()))
          got.add(events.receiveMessage(WAIT));
        if (policy.equals("fail")) {
          Failed failed = assertInstanceOf(Failed.class, got.get(0), got.toString());
          assertEquals(ErrorKind.OVERLOADED, failed.kind(), "the prefill half is gone: 503");
          assertEquals("kv_transfer_params", failed.param());
          assertTrue(
              failed.message().contains("could not load the prompt's KV blocks from 127.0.0.1:"),
              failed.message());
          assertTrue(
              failed.message().contains("connection after 2 of 5 KV blocks"), failed.message());
        } else {
          assertEquals(expected, tokens(got), "recompute: the decode side prefilled it itself");
        }
        assertEquals(
            importedBefore,
            ENGINES.get("demo#2").core().importedBlocks(),
            "the 2 blocks that arrived are not imported: a cut transfer hands over nothing");
        assertEquals(before, blocksUsed(decodeNode, d), "no half-imported block stays held");
      }
    } finally {
      if (prefillAlive) prefillNode.shutdownTestKit();
      decodeNode.shutdownTestKit();
    }
  }
}
