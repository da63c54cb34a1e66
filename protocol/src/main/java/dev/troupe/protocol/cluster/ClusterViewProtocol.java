package dev.troupe.protocol.cluster;

import dev.troupe.protocol.CborSerializable;
import java.util.List;
import java.util.Locale;
import org.apache.pekko.actor.Address;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.receptionist.ServiceKey;

/**
 * What a gateway asks every node for its cluster view ({@code GET /v1/cluster}, the dashboard,
 * {@code troupe status}): each node runs one reporter, registered with the receptionist under
 * {@link #NODE_REPORTERS}, that describes the node and the model replicas it hosts. A replica is
 * described by the node that hosts it, so a replica that is loading (its actor busy reading
 * weights) or failed is described too.
 */
public final class ClusterViewProtocol {
  /** Every node's reporter, whatever its roles. */
  public static final ServiceKey<Command> NODE_REPORTERS =
      ServiceKey.create(Command.class, "troupe-node-reporter");

  private ClusterViewProtocol() {}

  /**
   * How the cluster view names a node: {@code host:port} of its cluster address (the whole address
   * of a system without remoting).
   */
  public static String nodeName(Address address) {
    return address.getHost().isPresent() && address.getPort().isPresent()
        ? address.getHost().get() + ":" + address.getPort().get()
        : address.toString();
  }

  /** Everything a node reporter accepts. */
  public interface Command extends CborSerializable {}

  /** Asks for the node's {@link NodeReport}. */
  public record DescribeNode(ActorRef<NodeReport> replyTo) implements Command {
    public DescribeNode {
      if (replyTo == null) throw new IllegalArgumentException("replyTo is required");
    }
  }

  /**
   * One node as it sees itself.
   *
   * @param node its cluster address, {@code host:port}
   * @param roles its cluster roles
   * @param startedAtMillis when its actor system started (Unix milliseconds)
   * @param draining it is shutting down (readiness off, requests finishing or migrating)
   * @param jvm its JVM's size and load
   * @param replicas the model replicas hosted here, by id
   */
  public record NodeReport(
      String node,
      List<String> roles,
      long startedAtMillis,
      boolean draining,
      Jvm jvm,
      List<ReplicaReport> replicas)
      implements CborSerializable {
    public NodeReport {
      roles = List.copyOf(roles);
      replicas = List.copyOf(replicas);
    }
  }

  /**
   * @param processors hardware threads the JVM may use
   * @param heapUsedBytes heap in use now
   * @param heapMaxBytes the heap's limit
   * @param systemLoadAverage the machine's load average over the last minute (-1 where the OS does
   *     not say)
   */
  public record Jvm(int processors, long heapUsedBytes, long heapMaxBytes, double systemLoadAverage)
      implements CborSerializable {}

  /** Where a replica stands on its node. */
  public enum ReplicaState {
    /** Its model is loading (at start, after a move to this node, or after a restart). */
    LOADING,
    /** It serves. */
    READY,
    /** Its engine failed and it is restarting (it loads again after a back-off). */
    RESTARTING,
    /** Its node is shutting down: it finishes what it has and takes nothing new. */
    DRAINING,
    /**
     * Its model failed to load, or is not configured: it refuses every request ({@code reason}).
     */
    FAILED,
    /** It serves, but did not answer the description request in time (a long step, an overload). */
    UNRESPONSIVE;

    /** The name in JSON: lower case. */
    public String wireName() {
      return name().toLowerCase(Locale.ROOT);
    }
  }

  /**
   * One replica hosted by the reporting node.
   *
   * @param id {@code <model>#<replica>}
   * @param state where it stands
   * @param reason why it failed or restarts; null otherwise
   * @param restarts how often it restarted on this node after an engine failure
   * @param status its load, counters and details; null while it loads, restarts or failed, and when
   *     it did not answer
   */
  public record ReplicaReport(
      String id, ReplicaState state, String reason, int restarts, WorkerStatus status)
      implements CborSerializable {
    public ReplicaReport {
      if (id == null || id.isBlank()) throw new IllegalArgumentException("id is required");
      if (state == null) throw new IllegalArgumentException("state is required");
    }
  }
}
