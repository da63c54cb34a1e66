package dev.troupe.node;

import dev.troupe.worker.Drain;
import dev.troupe.worker.WorkerHealth;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.Done;
import org.apache.pekko.actor.CoordinatedShutdown;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.AskPattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The worker side of a graceful shutdown, a task of the node's Coordinated Shutdown in phase {@code
 * service-requests-done}: the node stops accepting ({@link WorkerHealth#drain()}: readiness fails),
 * each replica hosted here takes no new request ({@link Drain}: new ones go to other replicas) and
 * the generations in flight run to their end, up to {@code timeout}. Whatever still runs then
 * migrates when sharding hands the replicas off in the next phases ({@code HandOff}: the gateway
 * resumes each request token-exactly on another replica). Then the node leaves the cluster.
 *
 * <p>A shutdown the node asks for itself ({@code ActorSystem.terminate()}: a failed start, {@code
 * TroupeNode.close()}) skips the wait: its requests migrate at once.
 */
public final class WorkerDrain {
  private static final Logger log = LoggerFactory.getLogger(WorkerDrain.class);

  private WorkerDrain() {}

  /** Adds the drain to {@code system}'s Coordinated Shutdown. */
  public static void register(ActorSystem<?> system, Duration timeout) {
    CoordinatedShutdown.get(system)
        .addTask(
            CoordinatedShutdown.PhaseServiceRequestsDone(),
            "troupe-drain-model-workers",
            () -> drain(system, timeout));
  }

  /** Drains the replicas hosted here; completes when they are idle or {@code timeout} passed. */
  static CompletionStage<Done> drain(ActorSystem<?> system, Duration timeout) {
    WorkerHealth health = WorkerHealth.get(system);
    health.drain();
    var reason = CoordinatedShutdown.get(system).getShutdownReason();
    if (reason.isPresent() && reason.get() == CoordinatedShutdown.actorSystemTerminateReason()) {
      return CompletableFuture.completedFuture(Done.getInstance());
    }
    List<CompletableFuture<Drain.Drained>> asks = new ArrayList<>();
    for (var e : health.hosted().entrySet()) {
      if (e.getValue().worker() == null) continue;
      asks.add(
          AskPattern.<dev.troupe.protocol.cluster.ModelWorkerProtocol.Command, Drain.Drained>ask(
                  e.getValue().worker(), Drain::new, timeout, system.scheduler())
              .toCompletableFuture());
    }
    if (asks.isEmpty()) return CompletableFuture.completedFuture(Done.getInstance());
    log.info(
        "draining {} model replica(s): in-flight requests get up to {} s to finish",
        asks.size(),
        timeout.toSeconds());
    long start = System.nanoTime();
    return CompletableFuture.allOf(asks.toArray(CompletableFuture[]::new))
        .handle(
            (ok, timedOut) -> {
              long ms = (System.nanoTime() - start) / 1_000_000;
              if (timedOut == null) log.info("model replicas drained in {} ms", ms);
              else
                log.info(
                    "drain bound of {} s reached: requests still running migrate to other"
                        + " replicas",
                    timeout.toSeconds());
              return Done.getInstance();
            });
  }
}
