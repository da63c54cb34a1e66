package dev.troupe.protocol.cluster;

import dev.troupe.protocol.CborSerializable;
import java.util.List;
import java.util.Objects;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.cluster.sharding.typed.javadsl.EntityTypeKey;

/**
 * The list of training jobs: the {@code TrainingJobIndex} entity (one per cluster, id {@link
 * #ENTITY_ID}, role {@code trainer}) keeps every job's id, model and creation time in creation
 * order, and the status of the jobs known to have finished. A job's own entity stays the truth of
 * its status: the gateway lists jobs from here, asks the unfinished ones their status, and tells
 * the index when it sees one finished ({@link Settle}), so later lists need not ask it again.
 */
public final class TrainingJobIndexProtocol {
  public static final EntityTypeKey<Command> TYPE_KEY =
      EntityTypeKey.create(Command.class, "TrainingJobIndex");

  /** The index's single entity id. */
  public static final String ENTITY_ID = "jobs";

  public static final String ROLE = Roles.TRAINER;

  private TrainingJobIndexProtocol() {}

  /** Commands of the index. */
  public interface Command extends CborSerializable {}

  /**
   * Lists job {@code jobId} of model {@code modelId}, created at {@code createdAtMillis}; answered
   * once durable. Adding a listed job again is acknowledged and changes nothing.
   */
  public record Add(String jobId, String modelId, long createdAtMillis, ActorRef<Added> replyTo)
      implements Command {
    public Add {
      Objects.requireNonNull(jobId, "jobId");
      Objects.requireNonNull(modelId, "modelId");
    }
  }

  /** Reply to {@link Add}. */
  public record Added(String jobId) implements CborSerializable {}

  /**
   * Job {@code jobId} has finished with {@code status} ({@code SUCCEEDED} or {@code FAILED}): later
   * lists carry it. Unknown jobs and unfinished statuses are ignored; no reply.
   */
  public record Settle(String jobId, TrainingJobProtocol.Status status) implements Command {
    public Settle {
      Objects.requireNonNull(jobId, "jobId");
      Objects.requireNonNull(status, "status");
    }
  }

  /**
   * Removes job {@code jobId} from the list: its submission never reached its entity (the job does
   * not exist). No reply.
   */
  public record Forget(String jobId) implements Command {
    public Forget {
      Objects.requireNonNull(jobId, "jobId");
    }
  }

  /**
   * Up to {@code limit} jobs after job {@code after} (null: from the first) in creation order, or
   * newest first when {@code descending}. An {@code after} that is not listed gives an empty page.
   */
  public record ListJobs(String after, int limit, boolean descending, ActorRef<JobPage> replyTo)
      implements Command {
    public ListJobs {
      if (limit < 1) throw new IllegalArgumentException("limit must be >= 1");
      Objects.requireNonNull(replyTo, "replyTo");
    }
  }

  /**
   * A listed job.
   *
   * @param finalStatus {@code SUCCEEDED} or {@code FAILED} once known to have finished, else null
   *     (ask the job)
   */
  public record Entry(
      String jobId, String modelId, long createdAtMillis, TrainingJobProtocol.Status finalStatus)
      implements CborSerializable {
    public Entry {
      Objects.requireNonNull(jobId, "jobId");
      Objects.requireNonNull(modelId, "modelId");
    }
  }

  /** Reply to {@link ListJobs}. */
  public record JobPage(List<Entry> data, boolean hasMore) implements CborSerializable {
    public JobPage {
      data = List.copyOf(data);
    }
  }

  /** Whether {@code status} is one a job ends in. */
  public static boolean finished(TrainingJobProtocol.Status status) {
    return status == TrainingJobProtocol.Status.SUCCEEDED
        || status == TrainingJobProtocol.Status.FAILED;
  }
}
