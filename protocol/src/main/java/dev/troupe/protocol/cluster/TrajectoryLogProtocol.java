package dev.troupe.protocol.cluster;

import dev.troupe.protocol.CborSerializable;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.cluster.sharding.typed.javadsl.EntityTypeKey;

/**
 * What the gateway says to the {@code TrajectoryLog} entity (one per model, id = model UUID):
 * append validated trajectory groups under a split, read them back in pages. Groups travel as
 * compact JSON bytes (the gateway parsed and validated them once); the entity never parses them
 * again.
 */
public final class TrajectoryLogProtocol {
  /** One entity per model; entity id = the model's UUID. */
  public static final EntityTypeKey<Command> TYPE_KEY =
      EntityTypeKey.create(Command.class, "TrajectoryLog");

  /** Nodes that host trajectory logs. */
  public static final String ROLE = Roles.TRAINER;

  private TrajectoryLogProtocol() {}

  /** Commands of the {@code TrajectoryLog} entity. */
  public interface Command extends CborSerializable {}

  /**
   * Appends groups under {@code split}, metrics attributed to checkpoint {@code step}. Replies only
   * once the groups are durable. A repeated {@code idempotencyKey} (non-null) is answered with the
   * first reply and stores nothing.
   */
  public record Append(
      String split,
      long step,
      List<byte[]> groups,
      SplitStats stats,
      String idempotencyKey,
      ActorRef<AppendReply> replyTo)
      implements Command {
    public Append {
      Objects.requireNonNull(split, "split");
      Objects.requireNonNull(stats, "stats");
      groups = List.copyOf(groups);
    }
  }

  /**
   * Reads stored groups in log order, optionally of one split, after sequence number {@code
   * afterSeq} (-1: from the start), at most {@code limit} groups and about {@code maxBytes} bytes
   * (at least one group is returned when one exists).
   */
  public record ReadPage(
      String split, long afterSeq, int limit, long maxBytes, ActorRef<TrajectoryPage> replyTo)
      implements Command {
    public ReadPage {
      if (limit < 1) throw new IllegalArgumentException("limit must be >= 1");
    }
  }

  /** Deletes every logged group of the model (the model was deleted). */
  public record Purge(ActorRef<Purged> replyTo) implements Command {}

  /** Reply to {@link Purge}. */
  public record Purged(long groupsDeleted) implements CborSerializable {}

  /** Asks how many groups and trajectories are logged, per split (the cluster view). */
  public record GetCounts(ActorRef<Counts> replyTo) implements Command {
    public GetCounts {
      Objects.requireNonNull(replyTo, "replyTo");
    }
  }

  /** Reply to {@link GetCounts}: the logged groups and trajectories of each split, by name. */
  public record Counts(Map<String, SplitCount> splits) implements CborSerializable {
    public Counts {
      splits = Map.copyOf(splits);
    }
  }

  /** One split's logged groups and trajectories, over all its steps. */
  public record SplitCount(long groups, long trajectories) implements CborSerializable {}

  /** Reply to {@link Append}. */
  public sealed interface AppendReply extends CborSerializable {}

  /**
   * The groups are durable. {@code metrics} are the split's metrics now on checkpoint {@code step}.
   */
  public record Appended(
      String split,
      long step,
      int groups,
      int trajectories,
      long firstSeq,
      Map<String, Double> metrics,
      boolean duplicate)
      implements AppendReply {
    public Appended {
      metrics = Map.copyOf(metrics);
    }
  }

  /** The groups could not be stored (nothing was acknowledged); a retry may succeed. */
  public record AppendFailed(String message) implements AppendReply {}

  /**
   * This append can never be stored as it is (its split, key or metric names cannot be encoded):
   * nothing was stored, and the other appends of the same batch are unaffected. The gateway checks
   * every request first, so this is the entity's own guard.
   */
  public record AppendRejected(String message) implements AppendReply {}

  /** One stored group: its JSON exactly as stored. */
  public record StoredGroup(long seq, String split, long step, long loggedAtMillis, byte[] json)
      implements CborSerializable {}

  /** Reply to {@link ReadPage}. */
  public record TrajectoryPage(List<StoredGroup> data, boolean hasMore)
      implements CborSerializable {
    public TrajectoryPage {
      data = List.copyOf(data);
    }
  }

  /** Sum and count of one numeric metric. */
  public record MetricSum(double sum, long count) implements CborSerializable {
    MetricSum plus(MetricSum o) {
      return new MetricSum(sum + o.sum, count + o.count);
    }
  }

  /**
   * Mergeable statistics of logged groups, from which a split's metrics are derived. {@code
   * groupStdSum} sums the population standard deviation of rewards within each group that has more
   * than one trajectory ({@code groupsWithStd} of them), as ART's {@code reward_std_dev} does;
   * {@code rewardSquareSum} gives the standard deviation over all trajectories.
   */
  public record SplitStats(
      long groups,
      long trajectories,
      double rewardSum,
      double rewardSquareSum,
      double groupStdSum,
      long groupsWithStd,
      Map<String, MetricSum> metrics)
      implements CborSerializable {
    public static final SplitStats EMPTY = new SplitStats(0, 0, 0, 0, 0, 0, Map.of());

    public SplitStats {
      metrics = Map.copyOf(metrics);
    }

    /** Statistics of one group given its rewards and each trajectory's numeric metrics. */
    public static SplitStats ofGroup(
        double[] rewards, List<Map<String, Double>> trajectoryMetrics) {
      double sum = 0;
      double squares = 0;
      for (double r : rewards) {
        sum += r;
        squares += r * r;
      }
      double std = 0;
      long withStd = 0;
      if (rewards.length > 1) {
        double mean = sum / rewards.length;
        double ss = 0;
        for (double r : rewards) ss += (r - mean) * (r - mean);
        std = Math.sqrt(ss / rewards.length);
        withStd = 1;
      }
      Map<String, MetricSum> m = new HashMap<>();
      for (Map<String, Double> tm : trajectoryMetrics) {
        tm.forEach((k, v) -> m.merge(k, new MetricSum(v, 1), MetricSum::plus));
      }
      return new SplitStats(1, rewards.length, sum, squares, std, withStd, m);
    }

    /** Both sets of groups together. */
    public SplitStats plus(SplitStats o) {
      Map<String, MetricSum> m = new HashMap<>(metrics);
      o.metrics.forEach((k, v) -> m.merge(k, v, MetricSum::plus));
      return new SplitStats(
          groups + o.groups,
          trajectories + o.trajectories,
          rewardSum + o.rewardSum,
          rewardSquareSum + o.rewardSquareSum,
          groupStdSum + o.groupStdSum,
          groupsWithStd + o.groupsWithStd,
          m);
    }

    /**
     * The checkpoint metrics for {@code split}: {@code <split>/reward} (mean), {@code
     * <split>/reward_std_dev} (ART's: mean within-group std), {@code <split>/reward_std} (over all
     * trajectories), {@code <split>/num_trajectories}, {@code <split>/num_groups} and {@code
     * <split>/<key>} (mean) for every numeric metrics key.
     */
    public Map<String, Double> toMetrics(String split) {
      Map<String, Double> out = new LinkedHashMap<>();
      if (trajectories > 0) {
        double mean = rewardSum / trajectories;
        out.put(split + "/reward", mean);
        out.put(
            split + "/reward_std",
            Math.sqrt(Math.max(0, rewardSquareSum / trajectories - mean * mean)));
      }
      out.put(split + "/reward_std_dev", groupsWithStd > 0 ? groupStdSum / groupsWithStd : 0.0);
      out.put(split + "/num_trajectories", (double) trajectories);
      out.put(split + "/num_groups", (double) groups);
      new TreeMap<>(metrics)
          .forEach(
              (k, v) -> {
                String key = split + "/" + k;
                if (!out.containsKey(key) && v.count() > 0) out.put(key, v.sum() / v.count());
              });
      return out;
    }
  }
}
