package dev.troupe.worker.kv;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.engine.KvLayout;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The KV transfer channel over real TCP: blocks arrive whole and in order over several batches, a
 * refusal (unknown incarnation, wrong lease, layout mismatch) reaches the client as its reason and
 * ends the lease, a release frees a lease without reading it, and a pull whose connection fails
 * (the decode node gone) ends its lease then (before: at the lease's expiry, 30 s).
 */
class KvTransferChannelTest {
  static final KvLayout LAYOUT = new KvLayout("cpu", 4, "float32", 2, 1, 2, "tiny");
  static ActorTestKit kit;
  static InetSocketAddress at;

  /** Blocks of a lease as bytes filled with their id: a source a test can read back. */
  static final class Leases implements KvSource {
    final Map<String, Set<Integer>> leases = new ConcurrentHashMap<>();
    final Set<String> released = ConcurrentHashMap.newKeySet();

    @Override
    public CompletionStage<byte[]> export(String lease, List<Integer> blocks, KvLayout layout) {
      Set<Integer> held = leases.get(lease);
      if (held == null) return CompletableFuture.failedFuture(new KvRefused("unknown lease"));
      String why = LAYOUT.mismatch(layout);
      if (why != null) return CompletableFuture.failedFuture(new KvRefused("layout: " + why));
      int bb = (int) layout.blockBytes();
      byte[] out = new byte[blocks.size() * bb];
      for (int i = 0; i < blocks.size(); i++) {
        if (!held.contains(blocks.get(i)))
          return CompletableFuture.failedFuture(new KvRefused("block not leased"));
        java.util.Arrays.fill(out, i * bb, (i + 1) * bb, (byte) (int) blocks.get(i));
      }
      return CompletableFuture.completedFuture(out);
    }

    @Override
    public void release(String lease) {
      if (leases.remove(lease) != null) released.add(lease);
    }
  }

  @BeforeAll
  static void start() throws Exception {
    kit =
        ActorTestKit.create(
            com.typesafe.config.ConfigFactory.parseString(
                    "troupe.kv-transfer { host = \"127.0.0.1\", batch-bytes = 100 }")
                .withFallback(com.typesafe.config.ConfigFactory.load()));
    at =
        KvTransferServer.get(kit.system())
            .address()
            .toCompletableFuture()
            .get(10, TimeUnit.SECONDS);
  }

  @AfterAll
  static void stop() {
    kit.shutdownTestKit();
  }

  private static byte[] pull(String engine, String lease, List<Integer> blocks, KvLayout layout)
      throws Exception {
    try {
      return KvTransferClient.pull(
              kit.system(),
              at.getHostString(),
              at.getPort(),
              engine,
              lease,
              blocks,
              layout,
              Duration.ofSeconds(10))
          .toCompletableFuture()
          .get(20, TimeUnit.SECONDS);
    } catch (ExecutionException e) {
      throw (Exception) e.getCause();
    }
  }

  @Test
  void pullsBlocksInOrderAndEndsTheLease() throws Exception {
    Leases source = new Leases();
    source.leases.put("r1", Set.of(3, 7, 9, 12, 15));
    KvTransferServer.get(kit.system()).register("demo#0@a", source);
    // 128-byte blocks, 100-byte batches: one block per engine message
    byte[] got = pull("demo#0@a", "r1", List.of(7, 3, 15, 9), LAYOUT);
    assertEquals(4 * 128, got.length);
    int[] order = {7, 3, 15, 9};
    for (int i = 0; i < order.length; i++)
      for (int k = 0; k < 128; k++) assertEquals((byte) order[i], got[i * 128 + k]);
    assertTrue(source.released.contains("r1"), "a completed pull ends the lease");
    // the lease is gone: a second pull is refused with the reason
    Exception again =
        assertThrows(Exception.class, () -> pull("demo#0@a", "r1", List.of(7), LAYOUT));
    assertTrue(again.getMessage().contains("unknown lease"), again.getMessage());
    // an empty pull (everything cached on the decode side) still ends the lease
    source.leases.put("r2", Set.of(1));
    assertArrayEquals(new byte[0], pull("demo#0@a", "r2", List.of(), LAYOUT));
    assertTrue(source.released.contains("r2"));
  }

  @Test
  void refusalsCarryTheirReasonAndEndTheLease() throws Exception {
    Leases source = new Leases();
    source.leases.put("r", Set.of(1, 2));
    KvTransferServer.get(kit.system()).register("demo#1@b", source);
    Exception stale =
        assertThrows(Exception.class, () -> pull("demo#1@old", "r", List.of(1), LAYOUT));
    assertTrue(
        stale.getMessage().contains("no prefill replica incarnation demo#1@old"),
        stale.getMessage());
    Exception mismatch =
        assertThrows(
            Exception.class, () -> pull("demo#1@b", "r", List.of(1), LAYOUT.withModel("other")));
    assertTrue(mismatch.getMessage().contains("model other != tiny"), mismatch.getMessage());
    assertTrue(source.released.contains("r"), "a refused pull ends the lease");
  }

  @Test
  void releaseEndsALeaseUnread() throws Exception {
    Leases source = new Leases();
    source.leases.put("r", Set.of(1));
    KvTransferServer.get(kit.system()).register("demo#2@c", source);
    assertTrue(
        KvTransferClient.release(
                kit.system(), at.getHostString(), at.getPort(), "demo#2@c", "r", LAYOUT)
            .toCompletableFuture()
            .get(20, TimeUnit.SECONDS));
    assertTrue(source.released.contains("r"));
  }

  @Test
  void aPullAbandonedByItsConnectionEndsItsLease() throws Exception {
    Leases source = new Leases();
    List<Integer> blocks = java.util.stream.IntStream.range(0, 2_000).boxed().toList();
    source.leases.put("r", Set.copyOf(blocks));
    CompletableFuture<Void> busy = new CompletableFuture<>();
    KvSource slow =
        new KvSource() {
          @Override
          public CompletionStage<byte[]> export(String lease, List<Integer> b, KvLayout l) {
            // a replica busy with a long step, then every batch at once
            return busy.thenCompose(x -> source.export(lease, b, l));
          }

          @Override
          public void release(String lease) {
            source.release(lease);
          }
        };
    KvTransferServer.get(kit.system()).register("demo#3@d", slow);
    try (java.net.Socket s = new java.net.Socket(at.getHostString(), at.getPort())) {
      s.getOutputStream()
          .write(
              KvFrames.pull(KvFrames.PULL, new KvFrames.Pull("demo#3@d", "r", blocks, LAYOUT))
                  .toArray());
      s.getOutputStream().flush();
      Thread.sleep(300); // the pull is being served
      s.setSoLinger(true, 0); // the decode node is gone: its socket resets
    }
    busy.complete(null);
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
    while (!source.released.contains("r") && System.nanoTime() < deadline) Thread.sleep(20);
    assertTrue(source.released.contains("r"), "the abandoned pull's lease ended");
  }
}
