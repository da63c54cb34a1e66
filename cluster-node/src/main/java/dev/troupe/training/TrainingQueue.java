package dev.troupe.training;

import com.fasterxml.jackson.annotation.JsonSubTypes;
import com.fasterxml.jackson.annotation.JsonTypeInfo;
import dev.troupe.protocol.CborSerializable;
import dev.troupe.protocol.cluster.TrainingJobProtocol;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.function.Function;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.RecipientRef;
import org.apache.pekko.actor.typed.SupervisorStrategy;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.cluster.sharding.typed.ClusterShardingSettings;
import org.apache.pekko.cluster.sharding.typed.javadsl.ClusterSharding;
import org.apache.pekko.cluster.sharding.typed.javadsl.Entity;
import org.apache.pekko.cluster.sharding.typed.javadsl.EntityTypeKey;
import org.apache.pekko.persistence.typed.PersistenceId;
import org.apache.pekko.persistence.typed.RecoveryCompleted;
import org.apache.pekko.persistence.typed.javadsl.CommandHandlerWithReply;
import org.apache.pekko.persistence.typed.javadsl.EventHandler;
import org.apache.pekko.persistence.typed.javadsl.EventSourcedBehaviorWithEnforcedReplies;
import org.apache.pekko.persistence.typed.javadsl.ReplyEffect;
import org.apache.pekko.persistence.typed.javadsl.SignalHandler;

/**
 * One model's training jobs, one at a time, in the order they asked (entity id = model UUID,
 * sharded on role {@code trainer}, remembered while it has work): a job asks with {@link Enqueue},
 * is told {@link TrainingJob.Turn} when it may train, and says {@link Done} when it has finished. A
 * job's step is the model's latest + 1, so two jobs of one model must never train at once.
 *
 * <p>The queue is journaled. When it starts again (a crash, a hand-off) it repeats the turn to the
 * job that holds it (which ignores it while its run goes on, resumes otherwise, or gives it back
 * when finished) or gives the turn to the next job; asking again, for a job that restarted, is
 * answered the same way.
 */
public final class TrainingQueue
    extends EventSourcedBehaviorWithEnforcedReplies<
        TrainingQueue.Command, TrainingQueue.Event, TrainingQueue.Queue> {

  public static final EntityTypeKey<Command> TYPE_KEY =
      EntityTypeKey.create(Command.class, "TrainingQueue");

  public interface Command extends CborSerializable {}

  /** A job asks for its turn; asking again is answered again while it holds the turn. */
  public record Enqueue(String jobId) implements Command {
    public Enqueue {
      Objects.requireNonNull(jobId, "jobId");
    }
  }

  /** The job holding the turn has finished (a repeat, or from another job, changes nothing). */
  public record Done(String jobId) implements Command {
    public Done {
      Objects.requireNonNull(jobId, "jobId");
    }
  }

  /** After recovery: the turn goes to the first waiting job if nobody holds it. */
  private enum GrantNext implements Command {
    INSTANCE
  }

  @JsonTypeInfo(use = JsonTypeInfo.Id.NAME, property = "type")
  @JsonSubTypes({
    @JsonSubTypes.Type(value = JobQueued.class, name = "queue.job-queued.v1"),
    @JsonSubTypes.Type(value = TurnGiven.class, name = "queue.turn-given.v1"),
    @JsonSubTypes.Type(value = JobDone.class, name = "queue.job-done.v1")
  })
  public sealed interface Event extends CborSerializable {}

  public record JobQueued(String jobId) implements Event {}

  public record TurnGiven(String jobId) implements Event {}

  public record JobDone(String jobId) implements Event {}

  /**
   * @param waiting job ids waiting for their turn, in arrival order
   * @param current the job holding the turn, or null
   * @param known every job id ever queued (a finished job asking again changes nothing)
   */
  public record Queue(List<String> waiting, String current, Set<String> known)
      implements CborSerializable {
    public Queue {
      waiting = List.copyOf(waiting);
      known = Set.copyOf(known);
    }

    boolean idle() {
      return current == null && waiting.isEmpty();
    }

    Queue apply(Event e) {
      List<String> w = new ArrayList<>(waiting);
      Set<String> k = new LinkedHashSet<>(known);
      if (e instanceof JobQueued q) {
        w.add(q.jobId());
        k.add(q.jobId());
        return new Queue(w, current, k);
      }
      if (e instanceof TurnGiven t) {
        w.remove(t.jobId());
        return new Queue(w, t.jobId(), k);
      }
      if (e instanceof JobDone d) return new Queue(w, null, k);
      throw new IllegalStateException("unexpected event " + e);
    }
  }

  private final String modelId;
  private final ActorContext<Command> context;
  private final ActorRef<ClusterSharding.ShardCommand> shard;
  private final Function<String, RecipientRef<TrainingJobProtocol.Command>> jobs;

  /**
   * @param shard the hosting shard, told to passivate an idle queue; null when not sharded
   * @param jobs the {@link TrainingJob} of a job id
   */
  public static Behavior<Command> create(
      String modelId,
      ActorRef<ClusterSharding.ShardCommand> shard,
      Function<String, RecipientRef<TrainingJobProtocol.Command>> jobs) {
    return Behaviors.setup(ctx -> new TrainingQueue(modelId, ctx, shard, jobs));
  }

  /** Hosts the queues on trainer nodes (remembered while they have work). */
  public static void init(ActorSystem<?> system) {
    ClusterSharding sharding = ClusterSharding.get(system);
    sharding.init(
        Entity.of(
                TYPE_KEY,
                ctx ->
                    create(
                        ctx.getEntityId(),
                        ctx.getShard(),
                        id -> sharding.entityRefFor(TrainingJobProtocol.TYPE_KEY, id)))
            .withRole(TrainingJobProtocol.ROLE)
            .withSettings(remembered(system)));
  }

  /**
   * Sharding for entities that must come back by themselves after a crash or hand-off: remembered,
   * in the journal the entities themselves use (no other store to set up or lose).
   */
  static ClusterShardingSettings remembered(ActorSystem<?> system) {
    return ClusterShardingSettings.create(system)
        .withRememberEntities(true)
        .withRememberEntitiesStoreMode(
            ClusterShardingSettings.rememberEntitiesStoreModeEventSourced());
  }

  public static PersistenceId persistenceId(String modelId) {
    return PersistenceId.of("TrainingQueue", modelId);
  }

  private TrainingQueue(
      String modelId,
      ActorContext<Command> context,
      ActorRef<ClusterSharding.ShardCommand> shard,
      Function<String, RecipientRef<TrainingJobProtocol.Command>> jobs) {
    super(
        persistenceId(modelId),
        SupervisorStrategy.restartWithBackoff(
            java.time.Duration.ofMillis(200), java.time.Duration.ofSeconds(5), 0.1));
    this.modelId = modelId;
    this.context = context;
    this.shard = shard;
    this.jobs = jobs;
  }

  @Override
  public Queue emptyState() {
    return new Queue(List.of(), null, Set.of());
  }

  @Override
  public CommandHandlerWithReply<Command, Event, Queue> commandHandler() {
    return newCommandHandlerWithReplyBuilder()
        .forAnyState()
        .onCommand(Enqueue.class, this::onEnqueue)
        .onCommand(Done.class, this::onDone)
        .onCommand(GrantNext.class, (q, c) -> grantNext(q))
        .build();
  }

  private ReplyEffect<Event, Queue> onEnqueue(Queue q, Enqueue c) {
    if (c.jobId().equals(q.current())) {
      turn(c.jobId()); // it restarted: it resumes
      return Effect().noReply();
    }
    if (q.known().contains(c.jobId())) return Effect().noReply(); // waiting, or done
    if (q.current() != null) return Effect().persist(new JobQueued(c.jobId())).thenNoReply();
    return Effect()
        .persist(List.of(new JobQueued(c.jobId()), new TurnGiven(c.jobId())))
        .thenRun(s -> turn(c.jobId()))
        .thenNoReply();
  }

  private ReplyEffect<Event, Queue> onDone(Queue q, Done c) {
    if (!c.jobId().equals(q.current())) return nothingOrPassivate(q);
    if (q.waiting().isEmpty())
      return Effect().persist(new JobDone(c.jobId())).thenRun(this::passivateIfIdle).thenNoReply();
    String next = q.waiting().get(0);
    return Effect()
        .persist(List.of(new JobDone(c.jobId()), new TurnGiven(next)))
        .thenRun(s -> turn(next))
        .thenNoReply();
  }

  private ReplyEffect<Event, Queue> grantNext(Queue q) {
    if (q.current() != null || q.waiting().isEmpty()) return nothingOrPassivate(q);
    String next = q.waiting().get(0);
    return Effect().persist(new TurnGiven(next)).thenRun(s -> turn(next)).thenNoReply();
  }

  private void turn(String jobId) {
    jobs.apply(jobId).tell(new TrainingJob.Turn(modelId));
  }

  private ReplyEffect<Event, Queue> nothingOrPassivate(Queue q) {
    passivateIfIdle(q);
    return Effect().noReply();
  }

  /** A queue with nothing to do is let go, and so no longer remembered. */
  private void passivateIfIdle(Queue q) {
    if (q.idle() && shard != null) shard.tell(new ClusterSharding.Passivate<>(context.getSelf()));
  }

  @Override
  public SignalHandler<Queue> signalHandler() {
    return newSignalHandlerBuilder()
        .onSignal(
            RecoveryCompleted.instance(),
            q -> {
              if (q.current() != null) turn(q.current());
              else context.getSelf().tell(GrantNext.INSTANCE);
            })
        .build();
  }

  @Override
  public EventHandler<Queue, Event> eventHandler() {
    return newEventHandlerBuilder().forAnyState().onAnyEvent(Queue::apply);
  }
}
