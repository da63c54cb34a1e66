package dev.troupe.protocol.cluster;

import dev.troupe.protocol.CborSerializable;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.cluster.sharding.typed.javadsl.EntityTypeKey;

/**
 * What the gateway says to a training job: the {@code TrainingJob} entity (one per job, id = job
 * UUID, role {@code trainer}) holds a job's request, status and event stream, and runs the job on
 * its node when the model's queue gives it its turn (cluster-node's {@code dev.troupe.training}:
 * the queue, the run and their messages are the trainer's own). Also the checkpoint announcement to
 * the model workers.
 */
public final class TrainingJobProtocol {
  public static final EntityTypeKey<Command> TYPE_KEY =
      EntityTypeKey.create(Command.class, "TrainingJob");
  public static final String ROLE = Roles.TRAINER;

  /** Event types of a job's stream (the W&B OpenAPI enum). */
  public static final String TRAINING_STARTED = "training_started";

  public static final String GRADIENT_STEP = "gradient_step";
  public static final String TRAINING_ENDED = "training_ended";
  public static final String TRAINING_FAILED = "training_failed";

  private TrainingJobProtocol() {}

  /** Derived job status. */
  public enum Status {
    QUEUED,
    RUNNING,
    SUCCEEDED,
    FAILED
  }

  // ---------------------------------------------------------------- TrainingJob entity

  public interface Command extends CborSerializable {}

  /**
   * Records a new job; answered once it is durable. The groups are the validated {@code
   * TrajectoryGroup} JSON objects, compact bytes.
   */
  public record Submit(
      String modelId, List<byte[]> groups, TrainingConfig config, ActorRef<SubmitReply> replyTo)
      implements Command {
    public Submit {
      Objects.requireNonNull(modelId, "modelId");
      Objects.requireNonNull(config, "config");
      groups = List.copyOf(groups);
    }
  }

  /** Reads the job's status. */
  public record GetJob(ActorRef<JobReply> replyTo) implements Command {}

  /** A page of the job's events after event id {@code after} (null: from the first). */
  public record ListEvents(String after, int limit, ActorRef<JobReply> replyTo) implements Command {
    public ListEvents {
      if (limit < 1) throw new IllegalArgumentException("limit must be >= 1");
    }
  }

  /** Reply to {@link Submit}. */
  public sealed interface SubmitReply extends CborSerializable {}

  public record Submitted(String jobId) implements SubmitReply {}

  public record SubmitRejected(String message) implements SubmitReply {}

  /** Replies to {@link GetJob} and {@link ListEvents}. */
  public sealed interface JobReply extends CborSerializable {}

  /**
   * A job's status.
   *
   * @param step the checkpoint step the job produced (null until it succeeded)
   */
  public record JobView(
      String id,
      String modelId,
      Status status,
      Long step,
      Integer numSequences,
      int gradientSteps,
      String errorMessage,
      long createdAtMillis,
      Long startedAtMillis,
      Long finishedAtMillis)
      implements JobReply {}

  public record EventPage(List<JobEvent> data, boolean hasMore) implements JobReply {
    public EventPage {
      data = List.copyOf(data);
    }
  }

  public record JobNotFound(String id) implements JobReply {}

  /**
   * One client-visible event.
   *
   * @param data {@code num_sequences}, the metrics of a gradient step, or nothing
   * @param errorMessage for {@code training_failed}
   */
  public record JobEvent(
      String id, String type, Map<String, Double> data, String errorMessage, long createdAtMillis)
      implements CborSerializable {
    public JobEvent {
      Objects.requireNonNull(id, "id");
      Objects.requireNonNull(type, "type");
      data = Map.copyOf(data);
    }
  }

  // ---------------------------------------------------------------- to the model workers

  /**
   * A new checkpoint of trainable model {@code modelId} (whose base model the worker serves): the
   * worker takes the adapter from memory when its node trained it, else loads the PEFT directory
   * ({@code CheckpointStore.loadAdapter}), registers it with its runner between two engine steps
   * and serves it to requests naming {@code modelId} (latest) or {@code modelId:step<N>}; running
   * requests finish on the adapter they started with.
   *
   * @param directory the checkpoint directory on storage every worker node can read
   */
  public record AdapterCheckpoint(String modelId, long step, String directory)
      implements ModelWorkerProtocol.Command {
    public AdapterCheckpoint {
      Objects.requireNonNull(modelId, "modelId");
      Objects.requireNonNull(directory, "directory");
    }
  }
}
