package dev.troupe.training;

import com.fasterxml.jackson.annotation.JsonSubTypes;
import com.fasterxml.jackson.annotation.JsonTypeInfo;
import dev.troupe.protocol.CborSerializable;
import dev.troupe.protocol.cluster.TrainingJobProtocol.Enqueue;
import dev.troupe.protocol.cluster.TrainingJobProtocol.TrainerCommand;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.persistence.typed.PersistenceId;
import org.apache.pekko.persistence.typed.RecoveryCompleted;
import org.apache.pekko.persistence.typed.javadsl.CommandHandler;
import org.apache.pekko.persistence.typed.javadsl.EventHandler;
import org.apache.pekko.persistence.typed.javadsl.EventSourcedBehavior;
import org.apache.pekko.persistence.typed.javadsl.SignalHandler;

/**
 * Runs one model's training jobs one at a time, in the order they reach it (entity id = model UUID,
 * sharded on role {@code trainer}, never passivated). The queue is journaled: after a crash the
 * entity comes back on a live node at the next {@link Enqueue} (every status poll of an unfinished
 * job sends one) and takes up the job it was running — {@link JobRunner} then fails it visibly if
 * it had started, or runs it if it had not — and then the rest of the queue. The training itself
 * runs on the node's training thread ({@code trainingExecutor}).
 */
public final class ModelTrainer
    extends EventSourcedBehavior<TrainerCommand, ModelTrainer.Event, ModelTrainer.Queue> {

  @JsonTypeInfo(use = JsonTypeInfo.Id.NAME, property = "type")
  @JsonSubTypes({
    @JsonSubTypes.Type(value = JobQueued.class, name = "trainer.job-queued.v1"),
    @JsonSubTypes.Type(value = JobTaken.class, name = "trainer.job-taken.v1"),
    @JsonSubTypes.Type(value = JobDone.class, name = "trainer.job-done.v1")
  })
  public sealed interface Event extends CborSerializable {}

  public record JobQueued(String jobId) implements Event {}

  public record JobTaken(String jobId) implements Event {}

  public record JobDone(String jobId) implements Event {}

  /** Starts the next queued job if none is running. */
  public record StartNext() implements TrainerCommand {}

  /** The training thread is done with a job. */
  public record RunFinished(String jobId) implements TrainerCommand {}

  /**
   * @param pending queued job ids in order
   * @param current the job being trained, or null
   * @param known every job id ever queued (a repeated {@link Enqueue} is a no-op)
   */
  public record Queue(List<String> pending, String current, Set<String> known)
      implements CborSerializable {
    public Queue {
      pending = List.copyOf(pending);
      known = Set.copyOf(known);
    }

    Queue apply(Event e) {
      List<String> p = new ArrayList<>(pending);
      Set<String> k = new LinkedHashSet<>(known);
      if (e instanceof JobQueued q) {
        p.add(q.jobId());
        k.add(q.jobId());
        return new Queue(p, current, k);
      }
      if (e instanceof JobTaken t) {
        p.remove(t.jobId());
        return new Queue(p, t.jobId(), k);
      }
      if (e instanceof JobDone d)
        return new Queue(p, d.jobId().equals(current) ? null : current, k);
      throw new IllegalStateException("unexpected event " + e);
    }
  }

  private final ActorContext<TrainerCommand> context;
  private final JobRunner runner;
  private final Executor trainingExecutor;

  public static Behavior<TrainerCommand> create(
      String modelId, JobRunner runner, Executor trainingExecutor) {
    return Behaviors.setup(ctx -> new ModelTrainer(ctx, modelId, runner, trainingExecutor));
  }

  public static PersistenceId persistenceId(String modelId) {
    return PersistenceId.of("ModelTrainer", modelId);
  }

  private ModelTrainer(
      ActorContext<TrainerCommand> context,
      String modelId,
      JobRunner runner,
      Executor trainingExecutor) {
    super(persistenceId(modelId));
    this.context = context;
    this.runner = runner;
    this.trainingExecutor = trainingExecutor;
  }

  @Override
  public Queue emptyState() {
    return new Queue(List.of(), null, Set.of());
  }

  @Override
  public CommandHandler<TrainerCommand, Event, Queue> commandHandler() {
    return newCommandHandlerBuilder()
        .forAnyState()
        .onCommand(Enqueue.class, this::onEnqueue)
        .onCommand(StartNext.class, this::onStartNext)
        .onCommand(RunFinished.class, this::onRunFinished)
        .build();
  }

  private org.apache.pekko.persistence.typed.javadsl.Effect<Event, Queue> onEnqueue(
      Queue q, Enqueue c) {
    if (q.known().contains(c.jobId())) return Effect().none();
    return Effect()
        .persist(new JobQueued(c.jobId()))
        .thenRun(s -> context.getSelf().tell(new StartNext()));
  }

  private org.apache.pekko.persistence.typed.javadsl.Effect<Event, Queue> onStartNext(
      Queue q, StartNext c) {
    if (q.current() != null || q.pending().isEmpty()) return Effect().none();
    String jobId = q.pending().get(0);
    return Effect().persist(new JobTaken(jobId)).thenRun(s -> launch(jobId));
  }

  private org.apache.pekko.persistence.typed.javadsl.Effect<Event, Queue> onRunFinished(
      Queue q, RunFinished c) {
    if (!c.jobId().equals(q.current())) return Effect().none();
    return Effect()
        .persist(new JobDone(c.jobId()))
        .thenRun(s -> context.getSelf().tell(new StartNext()));
  }

  private void launch(String jobId) {
    if (runner.isRunning(jobId)) return; // still training here (this entity was restarted)
    context.pipeToSelf(
        CompletableFuture.runAsync(() -> runner.run(jobId), trainingExecutor),
        (ok, err) -> new RunFinished(jobId));
  }

  @Override
  public SignalHandler<Queue> signalHandler() {
    return newSignalHandlerBuilder()
        .onSignal(
            RecoveryCompleted.instance(),
            q -> {
              // a job taken before a crash or move is taken up again; JobRunner knows what to do
              if (q.current() != null) launch(q.current());
              else context.getSelf().tell(new StartNext());
            })
        .build();
  }

  @Override
  public EventHandler<Queue, Event> eventHandler() {
    return newEventHandlerBuilder().forAnyState().onAnyEvent(Queue::apply);
  }
}
