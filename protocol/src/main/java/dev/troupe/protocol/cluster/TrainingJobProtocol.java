package dev.troupe.protocol.cluster;

import dev.troupe.protocol.CborSerializable;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.cluster.sharding.typed.javadsl.EntityTypeKey;

/**
 * Training jobs: the {@code TrainingJob} entity (one per job, id = job UUID) holds a job's request,
 * status and event stream; the {@code ModelTrainer} entity (one per model, id = model UUID) runs
 * the model's jobs one at a time in the order they reach it. Both live on role {@code trainer}.
 */
public final class TrainingJobProtocol {
  public static final EntityTypeKey<Command> TYPE_KEY =
      EntityTypeKey.create(Command.class, "TrainingJob");
  public static final EntityTypeKey<TrainerCommand> TRAINER_TYPE_KEY =
      EntityTypeKey.create(TrainerCommand.class, "ModelTrainer");
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

  /** The trainer fetches what to train. */
  public record GetPayload(ActorRef<PayloadReply> replyTo) implements Command {}

  /** The trainer reports progress; each is answered with {@link Recorded} once durable. */
  public record MarkStarted(int numSequences, ActorRef<Recorded> replyTo) implements Command {}

  public record RecordStep(Map<String, Double> metrics, ActorRef<Recorded> replyTo)
      implements Command {
    public RecordStep {
      metrics = Map.copyOf(metrics);
    }
  }

  public record MarkSucceeded(long step, ActorRef<Recorded> replyTo) implements Command {}

  public record MarkFailed(String errorMessage, ActorRef<Recorded> replyTo) implements Command {}

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

  /** Reply to {@link GetPayload}. */
  public sealed interface PayloadReply extends CborSerializable {}

  public record Payload(
      String jobId, String modelId, List<byte[]> groups, TrainingConfig config, Status status)
      implements PayloadReply {
    public Payload {
      groups = List.copyOf(groups);
    }
  }

  public record NoPayload(String jobId) implements PayloadReply {}

  /** Acknowledges a durable progress record; {@code accepted} is false for a finished job. */
  public record Recorded(boolean accepted) implements CborSerializable {}

  // ---------------------------------------------------------------- ModelTrainer entity

  public interface TrainerCommand extends CborSerializable {}

  /** Queues a job for its model; repeating it for a known job does nothing (a wake-up call). */
  public record Enqueue(String jobId) implements TrainerCommand {
    public Enqueue {
      Objects.requireNonNull(jobId, "jobId");
    }
  }

  // ---------------------------------------------------------------- to the model workers

  /**
   * A new checkpoint of trainable model {@code modelId} (whose base model the worker serves): the
   * worker loads the PEFT directory ({@code CheckpointStore.loadAdapter}), registers it with its
   * runner between two engine steps and serves it to requests naming {@code modelId} (latest) or
   * {@code modelId:step<N>}; running requests finish on the adapter they started with.
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
