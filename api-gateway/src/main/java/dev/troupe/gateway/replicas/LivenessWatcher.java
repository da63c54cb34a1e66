package dev.troupe.gateway.replicas;

import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.eventstream.EventStream;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.cluster.ClusterEvent;
import org.apache.pekko.cluster.typed.Cluster;
import org.apache.pekko.cluster.typed.Subscribe;

/**
 * The gateway's one subscriber to cluster membership and reachability: turns a node becoming
 * unreachable, downed or removed into a {@link NodeLost} on the system's event stream (where the
 * requests in flight listen), and tells {@link Liveness} when a node has left so that its replicas
 * count as restarting elsewhere. Reachability is the failure detector's verdict (seconds), not the
 * Split Brain Resolver's (tens of seconds): requests move as soon as their node is unreachable.
 *
 * <p>One per gateway node, a system actor; nothing to recover on restart (it re-subscribes and the
 * cluster replays its current state).
 */
final class LivenessWatcher {
  private LivenessWatcher() {}

  static Behavior<Object> create(Liveness liveness) {
    return Behaviors.setup(
        ctx -> {
          Cluster cluster = Cluster.get(ctx.getSystem());
          cluster
              .subscriptions()
              .tell(Subscribe.create(ctx.getSelf().narrow(), ClusterEvent.ReachabilityEvent.class));
          cluster
              .subscriptions()
              .tell(Subscribe.create(ctx.getSelf().narrow(), ClusterEvent.MemberEvent.class));
          return Behaviors.receive(Object.class)
              .onMessage(
                  ClusterEvent.UnreachableMember.class,
                  e -> lost(ctx, e.member().address(), "unreachable"))
              .onMessage(
                  ClusterEvent.MemberDowned.class, e -> lost(ctx, e.member().address(), "downed"))
              .onMessage(
                  ClusterEvent.MemberRemoved.class,
                  e -> {
                    liveness.removed(e.member().address());
                    return lost(ctx, e.member().address(), "removed from the cluster");
                  })
              .onAnyMessage(e -> Behaviors.same())
              .build();
        });
  }

  private static Behavior<Object> lost(
      org.apache.pekko.actor.typed.javadsl.ActorContext<Object> ctx,
      org.apache.pekko.actor.Address address,
      String how) {
    ctx.getLog().info("cluster node {} {}: requests in flight there move", address, how);
    ctx.getSystem()
        .eventStream()
        .tell(
            new EventStream.Publish<>(new NodeLost(address, "its node " + address + " is " + how)));
    return Behaviors.same();
  }
}
