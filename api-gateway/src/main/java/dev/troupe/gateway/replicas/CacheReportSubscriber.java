package dev.troupe.gateway.replicas;

import dev.troupe.protocol.kv.CacheReports;
import dev.troupe.protocol.kv.CacheReports.CacheReport;
import dev.troupe.protocol.kv.CacheReports.SnapshotRequest;
import java.util.HashMap;
import java.util.Map;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.AbstractBehavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.Receive;
import org.apache.pekko.actor.typed.pubsub.Topic;

/**
 * Feeds one model's {@link CacheReport}s into the gateway's {@link RoutingTable}, and asks a
 * replica for a snapshot when its reports show that something was missed (a gap, or a replica that
 * was running before this gateway subscribed), at most once per {@code snapshotRetry} per replica.
 */
public final class CacheReportSubscriber extends AbstractBehavior<CacheReport> {
  private final RoutingTable table;
  private final long retryNanos;
  private final ActorRef<Topic.Command<SnapshotRequest>> requests;
  private final Map<String, Long> askedAt = new HashMap<>();

  public static Behavior<CacheReport> create(
      String model, RoutingTable table, RoutingSettings settings) {
    return Behaviors.setup(ctx -> new CacheReportSubscriber(ctx, model, table, settings));
  }

  private CacheReportSubscriber(
      ActorContext<CacheReport> ctx, String model, RoutingTable table, RoutingSettings settings) {
    super(ctx);
    this.table = table;
    this.retryNanos = settings.snapshotRetry().toNanos();
    ActorRef<Topic.Command<CacheReport>> reports =
        ctx.spawn(Topic.create(CacheReport.class, CacheReports.reportTopic(model)), "reports");
    reports.tell(Topic.subscribe(ctx.getSelf()));
    this.requests =
        ctx.spawn(
            Topic.create(SnapshotRequest.class, CacheReports.requestTopic(model)), "requests");
  }

  @Override
  public Receive<CacheReport> createReceive() {
    return newReceiveBuilder().onMessage(CacheReport.class, this::onReport).build();
  }

  private Behavior<CacheReport> onReport(CacheReport report) {
    if (table.apply(report)) {
      long now = table.now();
      Long last = askedAt.get(report.replica());
      if (last == null || now - last >= retryNanos) {
        askedAt.put(report.replica(), now);
        getContext()
            .getLog()
            .debug(
                "asking {} for a cache snapshot (report {} missed)",
                report.replica(),
                report.seq());
        requests.tell(Topic.publish(new SnapshotRequest(report.replica())));
      }
    }
    return this;
  }
}
