package dev.troupe.worker;

import com.typesafe.config.Config;
import dev.troupe.engine.serving.Engine;
import dev.troupe.protocol.cluster.KvRole;
import dev.troupe.protocol.cluster.ModelWorkerProtocol;
import dev.troupe.protocol.kv.BlockHash;
import dev.troupe.protocol.kv.CacheReports;
import dev.troupe.protocol.kv.CacheReports.CacheReport;
import dev.troupe.protocol.kv.CacheReports.ReplicaLoad;
import dev.troupe.protocol.kv.CacheReports.SnapshotRequest;
import dev.troupe.scheduler.CacheDelta;
import dev.troupe.scheduler.Scheduler;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import org.apache.pekko.actor.NoSerializationVerificationNeeded;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.AbstractBehavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.Receive;
import org.apache.pekko.actor.typed.javadsl.TimerScheduler;
import org.apache.pekko.actor.typed.pubsub.Topic;

/**
 * Publishes one replica's prefix-cache changes and load for the gateways' cache-aware routing
 * ({@link CacheReports}). The worker tells it after each engine step how its cache index changed
 * ({@link Changed}, drained from the scheduler on the worker's thread); this child coalesces the
 * changes and publishes at most one {@link CacheReport} per {@code interval}, and one at least
 * every {@code heartbeat} so gateways see the load of an idle replica and know it is alive. It
 * keeps a copy of the index, so a gateway's {@link SnapshotRequest} is answered here without
 * disturbing the engine.
 *
 * <p>A new instance (a restarted or moved replica, whose cache starts empty) has a new incarnation
 * id and starts its sequence at 1.
 */
public final class CacheReporter extends AbstractBehavior<CacheReporter.Command> {

  /** What the reporter accepts; local to its worker. */
  public sealed interface Command extends NoSerializationVerificationNeeded {}

  /** The worker's cache index changed (or only its load): sent after engine steps. */
  public record Changed(CacheDelta delta, ReplicaLoad load) implements Command {}

  private record Asked(SnapshotRequest request) implements Command {}

  private enum Tick implements Command {
    INSTANCE
  }

  private final String replica;
  private final KvRole kvRole;
  private final int blockSize;
  private final long heartbeatNanos;
  private final String incarnation = UUID.randomUUID().toString();
  private final ActorRef<Topic.Command<CacheReport>> reports;
  private final Set<BlockHash> index = new HashSet<>();
  private final Set<BlockHash> stored = new LinkedHashSet<>();
  private final Set<BlockHash> removed = new LinkedHashSet<>();
  private boolean replace;
  private boolean snapshotWanted;
  private ReplicaLoad load;
  private boolean loadChanged;
  private long seq;
  private long publishedAt;

  /**
   * Spawns the reporter of replica {@code entityId} under its worker, with the intervals of {@code
   * troupe.worker.cache-report-interval} and {@code cache-report-heartbeat}.
   */
  public static ActorRef<Command> spawn(
      ActorContext<?> ctx, String entityId, int blockSize, KvRole kvRole) {
    Config c = ctx.getSystem().settings().config().getConfig("troupe.worker");
    return ctx.spawn(
        create(
            entityId,
            ModelWorkerProtocol.parseEntityId(entityId).model(),
            blockSize,
            c.getDuration("cache-report-interval"),
            c.getDuration("cache-report-heartbeat"),
            kvRole),
        "prefix-cache-reporter");
  }

  /**
   * How {@code engine}'s cache index changed since the last call, and its load now; on the worker's
   * thread, after a step.
   *
   * @param adapters the adapters registered in the engine ({@code <model id>:step<N>})
   */
  public static Changed changes(Engine engine, List<String> adapters) {
    Scheduler s = engine.core().scheduler();
    ReplicaLoad load =
        new ReplicaLoad(
            s.numWaiting(),
            s.numRunning(),
            s.numWaitingTokens(),
            s.blocks().numUsed(),
            s.blocks().numBlocks(),
            adapters);
    return new Changed(s.prefixCache().drainChanges(), load);
  }

  /**
   * @param replica the worker's entity id ({@code <model>#<index>})
   * @param blockSize tokens per KV block of its engine
   */
  public static Behavior<Command> create(
      String replica, String model, int blockSize, Duration interval, Duration heartbeat) {
    return create(replica, model, blockSize, interval, heartbeat, KvRole.BOTH);
  }

  /**
   * @param kvRole the replica's role in disaggregated prefill/decode, told with every report
   */
  public static Behavior<Command> create(
      String replica,
      String model,
      int blockSize,
      Duration interval,
      Duration heartbeat,
      KvRole kvRole) {
    return Behaviors.setup(
        ctx ->
            Behaviors.withTimers(
                timers ->
                    new CacheReporter(
                        ctx, timers, replica, model, blockSize, interval, heartbeat, kvRole)));
  }

  private CacheReporter(
      ActorContext<Command> ctx,
      TimerScheduler<Command> timers,
      String replica,
      String model,
      int blockSize,
      Duration interval,
      Duration heartbeat,
      KvRole kvRole) {
    super(ctx);
    this.replica = replica;
    this.kvRole = kvRole;
    this.blockSize = blockSize;
    this.heartbeatNanos = heartbeat.toNanos();
    this.reports =
        ctx.spawn(Topic.create(CacheReport.class, CacheReports.reportTopic(model)), "reports");
    ActorRef<Topic.Command<SnapshotRequest>> requests =
        ctx.spawn(
            Topic.create(SnapshotRequest.class, CacheReports.requestTopic(model)), "requests");
    requests.tell(Topic.subscribe(ctx.messageAdapter(SnapshotRequest.class, Asked::new)));
    this.publishedAt = System.nanoTime() - heartbeatNanos;
    timers.startTimerWithFixedDelay(Tick.INSTANCE, interval);
  }

  @Override
  public Receive<Command> createReceive() {
    return newReceiveBuilder()
        .onMessage(Changed.class, this::onChanged)
        .onMessage(Asked.class, this::onAsked)
        .onMessageEquals(Tick.INSTANCE, this::onTick)
        .build();
  }

  private Behavior<Command> onChanged(Changed c) {
    CacheDelta d = c.delta();
    if (d.replace()) {
      index.clear();
      stored.clear();
      removed.clear();
      replace = true;
    }
    for (BlockHash h : d.removed()) {
      index.remove(h);
      if (!stored.remove(h)) removed.add(h);
    }
    for (BlockHash h : d.stored()) {
      index.add(h);
      removed.remove(h);
      stored.add(h);
    }
    boolean wasBusy = load != null && (load.running() > 0 || load.waiting() > 0);
    loadChanged |= !c.load().equals(load);
    load = c.load();
    // Fallen idle: report at once instead of at the next tick. An agent sends its next turn as
    // soon as the answer arrives; a report up to one interval old would still count the finished
    // request's blocks as load there and could send that turn away from its cached prefix. One
    // extra report per busy period at most.
    if (wasBusy && load.running() == 0 && load.waiting() == 0) return onTick();
    return this;
  }

  private Behavior<Command> onAsked(Asked a) {
    if (a.request().replica() == null || a.request().replica().equals(replica))
      snapshotWanted = true;
    return this;
  }

  private Behavior<Command> onTick() {
    if (load == null) return this; // nothing to say before the engine's first report
    long now = System.nanoTime();
    boolean changes = replace || !stored.isEmpty() || !removed.isEmpty();
    if (!snapshotWanted && !changes && !loadChanged && now - publishedAt < heartbeatNanos)
      return this;
    CacheReport report;
    if (snapshotWanted) {
      report =
          new CacheReport(
              replica,
              incarnation,
              ++seq,
              true,
              blockSize,
              CacheReports.pack(new ArrayList<>(index)),
              null,
              load,
              kvRole);
    } else {
      report =
          new CacheReport(
              replica,
              incarnation,
              ++seq,
              replace,
              blockSize,
              CacheReports.pack(List.copyOf(stored)),
              CacheReports.pack(List.copyOf(removed)),
              load,
              kvRole);
    }
    reports.tell(Topic.publish(report));
    stored.clear();
    removed.clear();
    replace = false;
    snapshotWanted = false;
    loadChanged = false;
    publishedAt = now;
    return this;
  }
}
