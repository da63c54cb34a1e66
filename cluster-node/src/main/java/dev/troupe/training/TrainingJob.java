package dev.troupe.training;

import com.fasterxml.jackson.annotation.JsonSubTypes;
import com.fasterxml.jackson.annotation.JsonTypeInfo;
import dev.troupe.protocol.CborSerializable;
import dev.troupe.protocol.cluster.TrainingConfig;
import dev.troupe.protocol.cluster.TrainingJobProtocol;
import dev.troupe.protocol.cluster.TrainingJobProtocol.Command;
import dev.troupe.protocol.cluster.TrainingJobProtocol.GetJob;
import dev.troupe.protocol.cluster.TrainingJobProtocol.JobNotFound;
import dev.troupe.protocol.cluster.TrainingJobProtocol.ListEvents;
import dev.troupe.protocol.cluster.TrainingJobProtocol.Submit;
import dev.troupe.protocol.cluster.TrainingJobProtocol.SubmitRejected;
import dev.troupe.protocol.cluster.TrainingJobProtocol.Submitted;
import dev.troupe.training.JobState.Empty;
import dev.troupe.training.JobState.Finished;
import dev.troupe.training.JobState.Known;
import dev.troupe.training.JobState.Queued;
import dev.troupe.training.JobState.Running;
import dev.troupe.training.JobState.Unfinished;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.function.Function;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.RecipientRef;
import org.apache.pekko.actor.typed.SupervisorStrategy;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.TimerScheduler;
import org.apache.pekko.cluster.sharding.typed.javadsl.ClusterSharding;
import org.apache.pekko.cluster.sharding.typed.javadsl.Entity;
import org.apache.pekko.persistence.typed.PersistenceId;
import org.apache.pekko.persistence.typed.RecoveryCompleted;
import org.apache.pekko.persistence.typed.javadsl.CommandHandlerWithReply;
import org.apache.pekko.persistence.typed.javadsl.EventHandler;
import org.apache.pekko.persistence.typed.javadsl.EventSourcedBehaviorWithEnforcedReplies;
import org.apache.pekko.persistence.typed.javadsl.ReplyEffect;
import org.apache.pekko.persistence.typed.javadsl.SignalHandler;

/**
 * One training job (entity id = job UUID, sharded on role {@code trainer}, remembered): its
 * request, status and client-visible event stream, all in the journal ({@link JobState}), and its
 * run. Once durable a job asks its model's {@link TrainingQueue} for its turn; given it, the job
 * starts a {@link TrainingRun} on this node, which reports progress as messages the job journals
 * (the groups never leave the node that holds them, and no gradient step crosses the cluster).
 *
 * <p>Recovery: sharding remembers the job until it finishes, so after a crash, a node's drain or a
 * shard's hand-off it is started again on a live trainer node, and a queued or running job asks for
 * its turn again. A running job then trains again from the model's latest checkpoint (the one it
 * started from: a job lists its checkpoint only at its end) and its stream goes on after the last
 * step it reported; a job whose checkpoint was already listed just reports success.
 */
public final class TrainingJob
    extends EventSourcedBehaviorWithEnforcedReplies<Command, TrainingJob.Event, JobState> {

  // ------------------------------------------------------------------ journal events

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

  /**
   * @param step the checkpoint step the job trains (absent, 0, in journals written before it was)
   */
  public record JobStarted(String eventId, int numSequences, long step, long atMillis)
      implements Event {}

  public record StepCompleted(String eventId, Map<String, Double> metrics, long atMillis)
      implements Event {}

  public record JobSucceeded(String eventId, long step, long atMillis) implements Event {}

  public record JobFailed(String eventId, String errorMessage, long atMillis) implements Event {}

  // ------------------------------------------------------------------ commands of the trainer

  /** From the model's {@link TrainingQueue}: the job may train now. */
  public record Turn(String modelId) implements Command {}

  /**
   * From the job's run, in order: the run packed {@code numSequences} rows to train step {@code
   * step} from.
   */
  record RunStarted(String runId, long step, int numSequences) implements Command {}

  /** Optimizer step {@code index} (from 0) is done. */
  record StepDone(String runId, int index, Map<String, Double> metrics) implements Command {
    StepDone {
      metrics = Map.copyOf(metrics);
    }
  }

  /** Checkpoint {@code step} is stored, listed with the model and announced to the workers. */
  record RunSucceeded(String runId, long step) implements Command {}

  record RunFailed(String runId, String errorMessage) implements Command {}

  /** The run's actor stopped. */
  private record RunStopped(String runId) implements Command {}

  /** Sharding's stop message (hand-off, passivation): the run on this node stops with the job. */
  enum Stop implements Command {
    INSTANCE
  }

  /** A finished or unknown job has been idle long enough to be passivated. */
  private enum Idle implements Command {
    INSTANCE
  }

  /**
   * What a job talks to.
   *
   * @param queues the {@link TrainingQueue} of a model id
   * @param runs what its runs need
   * @param idleTimeout after how long without a command a finished job is passivated
   */
  public record Links(
      Function<String, RecipientRef<TrainingQueue.Command>> queues,
      TrainingRun.Services runs,
      Duration idleTimeout) {}

  private final String jobId;
  private final ActorContext<Command> context;
  private final TimerScheduler<Command> timers;
  private final ActorRef<ClusterSharding.ShardCommand> shard;
  private final Links links;

  /** The run on this node, if any (not journaled: a run does not survive its job's actor). */
  private String runId;

  private ActorRef<TrainingRun.Command> run;

  /**
   * @param shard the hosting shard, told to passivate the job once it is finished; null when not
   *     sharded (tests)
   */
  public static Behavior<Command> create(
      String jobId, ActorRef<ClusterSharding.ShardCommand> shard, Links links) {
    return Behaviors.setup(
        ctx -> Behaviors.withTimers(timers -> new TrainingJob(jobId, ctx, timers, shard, links)));
  }

  /** Hosts the entities on trainer nodes (remembered: see the class comment), a proxy elsewhere. */
  public static void init(ActorSystem<?> system, TrainingRun.Services runs, Duration idleTimeout) {
    ClusterSharding sharding = ClusterSharding.get(system);
    Links links =
        new Links(id -> sharding.entityRefFor(TrainingQueue.TYPE_KEY, id), runs, idleTimeout);
    sharding.init(
        Entity.of(
                TrainingJobProtocol.TYPE_KEY,
                ctx -> create(ctx.getEntityId(), ctx.getShard(), links))
            .withRole(TrainingJobProtocol.ROLE)
            .withStopMessage(Stop.INSTANCE)
            .withSettings(TrainingQueue.remembered(system)));
  }

  public static PersistenceId persistenceId(String jobId) {
    return PersistenceId.of("TrainingJob", jobId);
  }

  private TrainingJob(
      String jobId,
      ActorContext<Command> context,
      TimerScheduler<Command> timers,
      ActorRef<ClusterSharding.ShardCommand> shard,
      Links links) {
    super(
        persistenceId(jobId),
        SupervisorStrategy.restartWithBackoff(Duration.ofMillis(200), Duration.ofSeconds(5), 0.1));
    this.jobId = jobId;
    this.context = context;
    this.timers = timers;
    this.shard = shard;
    this.links = links;
  }

  @Override
  public JobState emptyState() {
    return new Empty();
  }

  @Override
  public CommandHandlerWithReply<Command, Event, JobState> commandHandler() {
    var b = newCommandHandlerWithReplyBuilder();
    b.forStateType(Empty.class)
        .onCommand(Submit.class, this::onSubmit)
        .onCommand(GetJob.class, (s, c) -> read(s, Effect().reply(c.replyTo(), notFound())))
        .onCommand(ListEvents.class, (s, c) -> read(s, Effect().reply(c.replyTo(), notFound())))
        .onCommand(Turn.class, (s, c) -> handBack(c.modelId())); // never queued: not ours
    b.forStateType(Queued.class)
        .onCommand(Turn.class, (s, c) -> startRun(s, 0))
        .onCommand(RunStarted.class, this::onRunStarted);
    b.forStateType(Running.class)
        .onCommand(Turn.class, (s, c) -> startRun(s, s.step()))
        .onCommand(StepDone.class, this::onStepDone)
        .onCommand(RunSucceeded.class, this::onRunSucceeded);
    b.forStateType(Unfinished.class)
        .onCommand(RunFailed.class, this::onRunFailed)
        .onCommand(RunStopped.class, this::onRunStopped);
    b.forStateType(Finished.class).onCommand(Turn.class, (s, c) -> handBack(s.modelId()));
    b.forStateType(Known.class)
        .onCommand(Submit.class, (s, c) -> Effect().reply(c.replyTo(), exists()))
        .onCommand(GetJob.class, (s, c) -> read(s, Effect().reply(c.replyTo(), s.view(jobId))))
        .onCommand(ListEvents.class, (s, c) -> read(s, Effect().reply(c.replyTo(), s.page(c))));
    b.forAnyState()
        .onCommand(Stop.class, (s, c) -> Effect().stop().thenNoReply())
        .onCommand(Idle.class, (s, c) -> onIdle(s))
        // what a run this job no longer has reported, or a run's report in the wrong state
        .onAnyCommand(() -> Effect().noReply());
    return b.build();
  }

  private ReplyEffect<Event, JobState> onSubmit(Empty s, Submit c) {
    timers.cancel(Idle.INSTANCE);
    return Effect()
        .persist(new JobSubmitted(c.modelId(), c.groups(), c.config(), now()))
        .thenRun(st -> askForTurn(c.modelId()))
        .thenReply(c.replyTo(), st -> new Submitted(jobId));
  }

  /** Starts a run here unless one runs already. */
  private ReplyEffect<Event, JobState> startRun(Unfinished s, long step) {
    if (runId != null) return Effect().noReply(); // the queue repeated itself
    runId = UUID.randomUUID().toString();
    run =
        context.spawn(
            TrainingRun.create(
                new TrainingRun.Plan(jobId, runId, s.modelId(), s.groups(), s.config(), step),
                context.getSelf(),
                links.runs()),
            "run-" + runId);
    context.watchWith(run, new RunStopped(runId));
    return Effect().noReply();
  }

  private ReplyEffect<Event, JobState> onRunStarted(Queued s, RunStarted c) {
    if (!c.runId().equals(runId)) return Effect().noReply();
    return Effect()
        .persist(new JobStarted(eventId(), c.numSequences(), c.step(), now()))
        .thenNoReply();
  }

  private ReplyEffect<Event, JobState> onStepDone(Running s, StepDone c) {
    // a run trains every row again after a restart: only steps not reported yet are new
    if (!c.runId().equals(runId) || c.index() != s.gradientSteps()) return Effect().noReply();
    return Effect().persist(new StepCompleted(eventId(), c.metrics(), now())).thenNoReply();
  }

  private ReplyEffect<Event, JobState> onRunSucceeded(Running s, RunSucceeded c) {
    if (!c.runId().equals(runId)) return Effect().noReply();
    return Effect()
        .persist(new JobSucceeded(eventId(), c.step(), now()))
        .thenRun(st -> finished(s.modelId()))
        .thenNoReply();
  }

  private ReplyEffect<Event, JobState> onRunFailed(Unfinished s, RunFailed c) {
    if (!c.runId().equals(runId)) return Effect().noReply();
    return fail(s, c.errorMessage());
  }

  /** A run that stops before reporting its end has a bug: the job fails rather than hangs. */
  private ReplyEffect<Event, JobState> onRunStopped(Unfinished s, RunStopped c) {
    if (!c.runId().equals(runId)) return Effect().noReply();
    return fail(s, "the training run stopped unexpectedly; submit the job again");
  }

  private ReplyEffect<Event, JobState> fail(Unfinished s, String message) {
    return Effect()
        .persist(new JobFailed(eventId(), message, now()))
        .thenRun(st -> finished(s.modelId()))
        .thenNoReply();
  }

  /** The job is finished: its run ends, the model's next job gets its turn. */
  private void finished(String modelId) {
    runId = null;
    if (run != null) context.stop(run);
    run = null;
    links.queues().apply(modelId).tell(new TrainingQueue.Done(jobId));
    timers.startSingleTimer(Idle.INSTANCE, links.idleTimeout());
  }

  /** Gives back a turn this job does not need (it is finished, or unknown). */
  private ReplyEffect<Event, JobState> handBack(String modelId) {
    links.queues().apply(modelId).tell(new TrainingQueue.Done(jobId));
    return Effect().noReply();
  }

  /** A finished or unknown job that is read is passivated when nothing else comes. */
  private ReplyEffect<Event, JobState> read(JobState s, ReplyEffect<Event, JobState> reply) {
    if (!(s instanceof Unfinished)) timers.startSingleTimer(Idle.INSTANCE, links.idleTimeout());
    return reply;
  }

  private ReplyEffect<Event, JobState> onIdle(JobState s) {
    // only finished and unknown jobs are let go: sharding remembers the others
    if (shard != null && !(s instanceof Unfinished))
      shard.tell(new ClusterSharding.Passivate<>(context.getSelf()));
    return Effect().noReply();
  }

  private void askForTurn(String modelId) {
    links.queues().apply(modelId).tell(new TrainingQueue.Enqueue(jobId));
  }

  @Override
  public SignalHandler<JobState> signalHandler() {
    return newSignalHandlerBuilder()
        .onSignal(
            RecoveryCompleted.instance(),
            s -> {
              runId = null; // also after a restart on a journal failure: the run was stopped
              run = null;
              if (s instanceof Unfinished u) askForTurn(u.modelId());
              else if (s instanceof Finished f) finished(f.modelId()); // in case Done was lost
              else timers.startSingleTimer(Idle.INSTANCE, links.idleTimeout());
            })
        .build();
  }

  @Override
  public EventHandler<JobState, Event> eventHandler() {
    var b = newEventHandlerBuilder();
    b.forStateType(Empty.class).onEvent(JobSubmitted.class, Empty::submitted);
    b.forStateType(Queued.class)
        .onEvent(JobStarted.class, Queued::started)
        .onEvent(JobFailed.class, Queued::failed);
    b.forStateType(Running.class)
        .onEvent(StepCompleted.class, Running::stepped)
        .onEvent(JobSucceeded.class, Running::succeeded)
        .onEvent(JobFailed.class, Running::failed);
    return b.build();
  }

  private JobNotFound notFound() {
    return new JobNotFound(jobId);
  }

  private SubmitRejected exists() {
    return new SubmitRejected("job " + jobId + " already exists");
  }

  private static String eventId() {
    return UUID.randomUUID().toString();
  }

  private static long now() {
    return System.currentTimeMillis();
  }
}
