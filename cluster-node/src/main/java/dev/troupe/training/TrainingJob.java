package dev.troupe.training;

import com.fasterxml.jackson.annotation.JsonSubTypes;
import com.fasterxml.jackson.annotation.JsonTypeInfo;
import dev.troupe.protocol.CborSerializable;
import dev.troupe.protocol.cluster.TrainingConfig;
import dev.troupe.protocol.cluster.TrainingJobProtocol;
import dev.troupe.protocol.cluster.TrainingJobProtocol.Command;
import dev.troupe.protocol.cluster.TrainingJobProtocol.Enqueue;
import dev.troupe.protocol.cluster.TrainingJobProtocol.EventPage;
import dev.troupe.protocol.cluster.TrainingJobProtocol.GetJob;
import dev.troupe.protocol.cluster.TrainingJobProtocol.GetPayload;
import dev.troupe.protocol.cluster.TrainingJobProtocol.JobEvent;
import dev.troupe.protocol.cluster.TrainingJobProtocol.JobNotFound;
import dev.troupe.protocol.cluster.TrainingJobProtocol.JobView;
import dev.troupe.protocol.cluster.TrainingJobProtocol.ListEvents;
import dev.troupe.protocol.cluster.TrainingJobProtocol.MarkFailed;
import dev.troupe.protocol.cluster.TrainingJobProtocol.MarkStarted;
import dev.troupe.protocol.cluster.TrainingJobProtocol.MarkSucceeded;
import dev.troupe.protocol.cluster.TrainingJobProtocol.NoPayload;
import dev.troupe.protocol.cluster.TrainingJobProtocol.Payload;
import dev.troupe.protocol.cluster.TrainingJobProtocol.RecordStep;
import dev.troupe.protocol.cluster.TrainingJobProtocol.Recorded;
import dev.troupe.protocol.cluster.TrainingJobProtocol.Status;
import dev.troupe.protocol.cluster.TrainingJobProtocol.Submit;
import dev.troupe.protocol.cluster.TrainingJobProtocol.Submitted;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.function.Function;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.RecipientRef;
import org.apache.pekko.persistence.typed.PersistenceId;
import org.apache.pekko.persistence.typed.javadsl.CommandHandlerWithReply;
import org.apache.pekko.persistence.typed.javadsl.EventHandler;
import org.apache.pekko.persistence.typed.javadsl.EventSourcedBehaviorWithEnforcedReplies;
import org.apache.pekko.persistence.typed.javadsl.ReplyEffect;

/**
 * One training job (entity id = job UUID, sharded on role {@code trainer}): its request, status and
 * client-visible event stream, all in the journal. The job is queued with its model's {@code
 * ModelTrainer} once durable; every status read of an unfinished job repeats that (idempotent)
 * call, so a trainer lost with its node is woken on a live node by the client's polling and the job
 * resumes or fails visibly — it never hangs. Lifecycle: {@link Empty} → {@link Job} (queued →
 * running → succeeded | failed).
 */
public final class TrainingJob
    extends EventSourcedBehaviorWithEnforcedReplies<Command, TrainingJob.Event, TrainingJob.State> {

  @JsonTypeInfo(use = JsonTypeInfo.Id.NAME, property = "type")
  @JsonSubTypes({
    @JsonSubTypes.Type(value = JobSubmitted.class, name = "job.submitted.v1"),
    @JsonSubTypes.Type(value = JobStarted.class, name = "job.started.v1"),
    @JsonSubTypes.Type(value = StepCompleted.class, name = "job.step-completed.v1"),
    @JsonSubTypes.Type(value = JobSucceeded.class, name = "job.succeeded.v1"),
    @JsonSubTypes.Type(value = JobFailed.class, name = "job.failed.v1")
  })
  public sealed interface Event extends CborSerializable {}

  public record JobSubmitted(
      String modelId, List<byte[]> groups, TrainingConfig config, long atMillis) implements Event {}

  public record JobStarted(String eventId, int numSequences, long atMillis) implements Event {}

  public record StepCompleted(String eventId, Map<String, Double> metrics, long atMillis)
      implements Event {}

  public record JobSucceeded(String eventId, long step, long atMillis) implements Event {}

  public record JobFailed(String eventId, String errorMessage, long atMillis) implements Event {}

  @JsonTypeInfo(use = JsonTypeInfo.Id.NAME, property = "state")
  @JsonSubTypes({
    @JsonSubTypes.Type(value = Empty.class, name = "empty"),
    @JsonSubTypes.Type(value = Job.class, name = "job")
  })
  public sealed interface State extends CborSerializable {}

  /** No job with this id. */
  public record Empty() implements State {
    Job submitted(JobSubmitted e) {
      return new Job(
          e.modelId(),
          e.groups(),
          e.config(),
          Status.QUEUED,
          List.of(),
          null,
          null,
          0,
          null,
          e.atMillis(),
          null,
          null);
    }
  }

  /**
   * A job. {@code groups} is dropped once the job is finished.
   *
   * @param events the client-visible stream, in order
   */
  public record Job(
      String modelId,
      List<byte[]> groups,
      TrainingConfig config,
      Status status,
      List<JobEvent> events,
      Long step,
      Integer numSequences,
      int gradientSteps,
      String errorMessage,
      long createdAtMillis,
      Long startedAtMillis,
      Long finishedAtMillis)
      implements State {
    public Job {
      groups = List.copyOf(groups);
      events = List.copyOf(events);
    }

    boolean finished() {
      return status == Status.SUCCEEDED || status == Status.FAILED;
    }

    JobView view(String id) {
      return new JobView(
          id,
          modelId,
          status,
          step,
          numSequences,
          gradientSteps,
          errorMessage,
          createdAtMillis,
          startedAtMillis,
          finishedAtMillis);
    }

    EventPage page(ListEvents cmd) {
      int from = 0;
      if (cmd.after() != null) {
        from = events.size(); // an unknown cursor reads as "nothing after it"
        for (int i = 0; i < events.size(); i++)
          if (events.get(i).id().equals(cmd.after())) from = i + 1;
      }
      int to = Math.min(events.size(), from + cmd.limit());
      return new EventPage(events.subList(from, to), to < events.size());
    }

    private Job with(
        Status s,
        JobEvent e,
        Long step,
        Integer n,
        int steps,
        String error,
        Long started,
        Long finished,
        boolean keepGroups) {
      List<JobEvent> ev = new ArrayList<>(events);
      ev.add(e);
      return new Job(
          modelId,
          keepGroups ? groups : List.of(),
          config,
          s,
          ev,
          step,
          n,
          steps,
          error,
          createdAtMillis,
          started,
          finished);
    }

    Job apply(Event event) {
      if (event instanceof JobStarted e)
        return with(
            Status.RUNNING,
            new JobEvent(
                e.eventId(),
                TrainingJobProtocol.TRAINING_STARTED,
                Map.of("num_sequences", (double) e.numSequences()),
                null,
                e.atMillis()),
            step,
            e.numSequences(),
            gradientSteps,
            null,
            e.atMillis(),
            null,
            true);
      if (event instanceof StepCompleted e)
        return with(
            status,
            new JobEvent(
                e.eventId(), TrainingJobProtocol.GRADIENT_STEP, e.metrics(), null, e.atMillis()),
            step,
            numSequences,
            gradientSteps + 1,
            null,
            startedAtMillis,
            null,
            true);
      if (event instanceof JobSucceeded e)
        return with(
            Status.SUCCEEDED,
            new JobEvent(
                e.eventId(),
                TrainingJobProtocol.TRAINING_ENDED,
                Map.of("step", (double) e.step()),
                null,
                e.atMillis()),
            e.step(),
            numSequences,
            gradientSteps,
            null,
            startedAtMillis,
            e.atMillis(),
            false);
      if (event instanceof JobFailed e)
        return with(
            Status.FAILED,
            new JobEvent(
                e.eventId(),
                TrainingJobProtocol.TRAINING_FAILED,
                Map.of(),
                e.errorMessage(),
                e.atMillis()),
            step,
            numSequences,
            gradientSteps,
            e.errorMessage(),
            startedAtMillis,
            e.atMillis(),
            false);
      throw new IllegalStateException("unexpected event " + event);
    }
  }

  private final String jobId;
  private final Function<String, RecipientRef<TrainingJobProtocol.TrainerCommand>> trainers;

  /**
   * @param trainers the {@code ModelTrainer} of a model id (sharding in production)
   */
  public static Behavior<Command> create(
      String jobId, Function<String, RecipientRef<TrainingJobProtocol.TrainerCommand>> trainers) {
    return new TrainingJob(jobId, trainers);
  }

  public static PersistenceId persistenceId(String jobId) {
    return PersistenceId.of("TrainingJob", jobId);
  }

  private TrainingJob(
      String jobId, Function<String, RecipientRef<TrainingJobProtocol.TrainerCommand>> trainers) {
    super(persistenceId(jobId));
    this.jobId = jobId;
    this.trainers = trainers;
  }

  @Override
  public State emptyState() {
    return new Empty();
  }

  @Override
  public CommandHandlerWithReply<Command, Event, State> commandHandler() {
    var b = newCommandHandlerWithReplyBuilder();
    b.forStateType(Empty.class)
        .onCommand(Submit.class, this::onSubmit)
        .onCommand(GetJob.class, (s, c) -> Effect().reply(c.replyTo(), new JobNotFound(jobId)))
        .onCommand(ListEvents.class, (s, c) -> Effect().reply(c.replyTo(), new JobNotFound(jobId)))
        .onCommand(GetPayload.class, (s, c) -> Effect().reply(c.replyTo(), new NoPayload(jobId)))
        .onCommand(MarkStarted.class, (s, c) -> Effect().reply(c.replyTo(), new Recorded(false)))
        .onCommand(RecordStep.class, (s, c) -> Effect().reply(c.replyTo(), new Recorded(false)))
        .onCommand(MarkSucceeded.class, (s, c) -> Effect().reply(c.replyTo(), new Recorded(false)))
        .onCommand(MarkFailed.class, (s, c) -> Effect().reply(c.replyTo(), new Recorded(false)));
    b.forStateType(Job.class)
        .onCommand(
            Submit.class,
            (s, c) ->
                Effect()
                    .reply(
                        c.replyTo(),
                        new TrainingJobProtocol.SubmitRejected("job " + jobId + " already exists")))
        .onCommand(GetJob.class, (s, c) -> wake(s, Effect().reply(c.replyTo(), s.view(jobId))))
        .onCommand(ListEvents.class, (s, c) -> wake(s, Effect().reply(c.replyTo(), s.page(c))))
        .onCommand(
            GetPayload.class,
            (s, c) ->
                Effect()
                    .reply(
                        c.replyTo(),
                        new Payload(jobId, s.modelId(), s.groups(), s.config(), s.status())))
        .onCommand(MarkStarted.class, this::onStarted)
        .onCommand(RecordStep.class, this::onStep)
        .onCommand(MarkSucceeded.class, this::onSucceeded)
        .onCommand(MarkFailed.class, this::onFailed);
    return b.build();
  }

  private ReplyEffect<Event, State> onSubmit(Empty s, Submit c) {
    return Effect()
        .persist(new JobSubmitted(c.modelId(), c.groups(), c.config(), System.currentTimeMillis()))
        .thenRun(st -> trainers.apply(c.modelId()).tell(new Enqueue(jobId)))
        .thenReply(c.replyTo(), st -> new Submitted(jobId));
  }

  /** An unfinished job reminds its trainer that it exists (idempotent; see the class comment). */
  private ReplyEffect<Event, State> wake(Job s, ReplyEffect<Event, State> reply) {
    if (!s.finished()) trainers.apply(s.modelId()).tell(new Enqueue(jobId));
    return reply;
  }

  private ReplyEffect<Event, State> onStarted(Job s, MarkStarted c) {
    if (s.status() != Status.QUEUED)
      return Effect().reply(c.replyTo(), new Recorded(s.status() == Status.RUNNING));
    return Effect()
        .persist(
            new JobStarted(
                UUID.randomUUID().toString(), c.numSequences(), System.currentTimeMillis()))
        .thenReply(c.replyTo(), st -> new Recorded(true));
  }

  private ReplyEffect<Event, State> onStep(Job s, RecordStep c) {
    if (s.status() != Status.RUNNING) return Effect().reply(c.replyTo(), new Recorded(false));
    return Effect()
        .persist(
            new StepCompleted(
                UUID.randomUUID().toString(), c.metrics(), System.currentTimeMillis()))
        .thenReply(c.replyTo(), st -> new Recorded(true));
  }

  private ReplyEffect<Event, State> onSucceeded(Job s, MarkSucceeded c) {
    if (s.finished()) return Effect().reply(c.replyTo(), new Recorded(false));
    return Effect()
        .persist(
            new JobSucceeded(UUID.randomUUID().toString(), c.step(), System.currentTimeMillis()))
        .thenReply(c.replyTo(), st -> new Recorded(true));
  }

  private ReplyEffect<Event, State> onFailed(Job s, MarkFailed c) {
    if (s.finished()) return Effect().reply(c.replyTo(), new Recorded(false));
    return Effect()
        .persist(
            new JobFailed(
                UUID.randomUUID().toString(), c.errorMessage(), System.currentTimeMillis()))
        .thenReply(c.replyTo(), st -> new Recorded(true));
  }

  @Override
  public EventHandler<State, Event> eventHandler() {
    var b = newEventHandlerBuilder();
    b.forStateType(Empty.class).onEvent(JobSubmitted.class, Empty::submitted);
    b.forStateType(Job.class).onAnyEvent((s, e) -> ((Job) s).apply(e));
    return b.build();
  }
}
