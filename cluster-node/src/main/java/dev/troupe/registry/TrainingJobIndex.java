package dev.troupe.registry;

import com.fasterxml.jackson.annotation.JsonSubTypes;
import com.fasterxml.jackson.annotation.JsonTypeInfo;
import dev.troupe.persistence.PersistenceSettings;
import dev.troupe.protocol.CborSerializable;
import dev.troupe.protocol.cluster.TrainingJobIndexProtocol;
import dev.troupe.protocol.cluster.TrainingJobIndexProtocol.Add;
import dev.troupe.protocol.cluster.TrainingJobIndexProtocol.Added;
import dev.troupe.protocol.cluster.TrainingJobIndexProtocol.Command;
import dev.troupe.protocol.cluster.TrainingJobIndexProtocol.Entry;
import dev.troupe.protocol.cluster.TrainingJobIndexProtocol.Forget;
import dev.troupe.protocol.cluster.TrainingJobIndexProtocol.JobPage;
import dev.troupe.protocol.cluster.TrainingJobIndexProtocol.ListJobs;
import dev.troupe.protocol.cluster.TrainingJobIndexProtocol.Settle;
import dev.troupe.protocol.cluster.TrainingJobProtocol.Status;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.cluster.sharding.typed.javadsl.ClusterSharding;
import org.apache.pekko.cluster.sharding.typed.javadsl.Entity;
import org.apache.pekko.persistence.typed.PersistenceId;
import org.apache.pekko.persistence.typed.javadsl.CommandHandlerWithReply;
import org.apache.pekko.persistence.typed.javadsl.EventHandler;
import org.apache.pekko.persistence.typed.javadsl.EventSourcedBehaviorWithEnforcedReplies;
import org.apache.pekko.persistence.typed.javadsl.ReplyEffect;
import org.apache.pekko.persistence.typed.javadsl.RetentionCriteria;

/**
 * The list of training jobs (one entity, id {@code jobs}, sharded on role {@code trainer}): every
 * job's id, model and creation time in creation order, for {@code GET /v1/preview/training-jobs},
 * and the final status of the jobs the gateway has seen finish. The gateway adds a job before it
 * submits it, so a job that exists is always listed; one whose submission never arrived is
 * forgotten when the gateway finds its entity empty. Survives a restart (journal + snapshots).
 */
public final class TrainingJobIndex
    extends EventSourcedBehaviorWithEnforcedReplies<
        Command, TrainingJobIndex.Event, TrainingJobIndex.State> {

  /** Journal events; type names carry a version so a renamed class still reads old rows. */
  @JsonTypeInfo(use = JsonTypeInfo.Id.NAME, property = "type")
  @JsonSubTypes({
    @JsonSubTypes.Type(value = JobListed.class, name = "job-index.listed.v1"),
    @JsonSubTypes.Type(value = JobSettled.class, name = "job-index.settled.v1"),
    @JsonSubTypes.Type(value = JobForgotten.class, name = "job-index.forgotten.v1")
  })
  public sealed interface Event extends CborSerializable {}

  public record JobListed(String jobId, String modelId, long createdAtMillis) implements Event {}

  public record JobSettled(String jobId, Status status) implements Event {}

  public record JobForgotten(String jobId) implements Event {}

  /** Jobs by id in creation order. */
  public record State(Map<String, Entry> jobs) implements CborSerializable {
    public State {
      jobs = Collections.unmodifiableMap(new LinkedHashMap<>(jobs));
    }
  }

  /** Hosts the index on role {@code trainer}, a proxy elsewhere. */
  public static void init(ActorSystem<?> system, PersistenceSettings settings) {
    ClusterSharding.get(system)
        .init(
            Entity.of(TrainingJobIndexProtocol.TYPE_KEY, ctx -> create(ctx.getEntityId(), settings))
                .withRole(TrainingJobIndexProtocol.ROLE));
  }

  /** The behaviour of index entity {@code entityId}. */
  public static Behavior<Command> create(String entityId, PersistenceSettings settings) {
    return new TrainingJobIndex(entityId, settings);
  }

  private final PersistenceSettings settings;

  private TrainingJobIndex(String entityId, PersistenceSettings settings) {
    super(PersistenceId.of("TrainingJobIndex", entityId));
    this.settings = settings;
  }

  @Override
  public State emptyState() {
    return new State(Map.of());
  }

  @Override
  public RetentionCriteria retentionCriteria() {
    return RetentionCriteria.snapshotEvery(settings.snapshotEvery(), 2);
  }

  @Override
  public CommandHandlerWithReply<Command, Event, State> commandHandler() {
    return newCommandHandlerWithReplyBuilder()
        .forAnyState()
        .onCommand(Add.class, this::onAdd)
        .onCommand(Settle.class, this::onSettle)
        .onCommand(Forget.class, this::onForget)
        .onCommand(ListJobs.class, this::onList)
        .build();
  }

  private ReplyEffect<Event, State> onAdd(State state, Add cmd) {
    if (state.jobs().containsKey(cmd.jobId()))
      return Effect().reply(cmd.replyTo(), new Added(cmd.jobId()));
    return Effect()
        .persist(new JobListed(cmd.jobId(), cmd.modelId(), cmd.createdAtMillis()))
        .thenReply(cmd.replyTo(), s -> new Added(cmd.jobId()));
  }

  private ReplyEffect<Event, State> onSettle(State state, Settle cmd) {
    Entry e = state.jobs().get(cmd.jobId());
    if (e == null || e.finalStatus() != null || !TrainingJobIndexProtocol.finished(cmd.status()))
      return Effect().noReply();
    return Effect().persist(new JobSettled(cmd.jobId(), cmd.status())).thenNoReply();
  }

  private ReplyEffect<Event, State> onForget(State state, Forget cmd) {
    if (!state.jobs().containsKey(cmd.jobId())) return Effect().noReply();
    return Effect().persist(new JobForgotten(cmd.jobId())).thenNoReply();
  }

  private ReplyEffect<Event, State> onList(State state, ListJobs cmd) {
    List<Entry> all = new ArrayList<>(state.jobs().values());
    if (cmd.descending()) Collections.reverse(all);
    List<Entry> page = new ArrayList<>();
    boolean started = cmd.after() == null;
    boolean more = false;
    for (Entry e : all) {
      if (!started) {
        started = e.jobId().equals(cmd.after());
        continue;
      }
      if (page.size() == cmd.limit()) {
        more = true;
        break;
      }
      page.add(e);
    }
    return Effect().reply(cmd.replyTo(), new JobPage(page, more));
  }

  @Override
  public EventHandler<State, Event> eventHandler() {
    return newEventHandlerBuilder()
        .forAnyState()
        .onEvent(
            JobListed.class,
            (s, e) ->
                with(s, e.jobId(), new Entry(e.jobId(), e.modelId(), e.createdAtMillis(), null)))
        .onEvent(
            JobSettled.class,
            (s, e) -> {
              Entry was = s.jobs().get(e.jobId());
              return was == null
                  ? s
                  : with(
                      s,
                      e.jobId(),
                      new Entry(was.jobId(), was.modelId(), was.createdAtMillis(), e.status()));
            })
        .onEvent(
            JobForgotten.class,
            (s, e) -> {
              LinkedHashMap<String, Entry> m = new LinkedHashMap<>(s.jobs());
              m.remove(e.jobId());
              return new State(m);
            })
        .build();
  }

  private static State with(State s, String jobId, Entry entry) {
    LinkedHashMap<String, Entry> m = new LinkedHashMap<>(s.jobs());
    m.put(jobId, entry); // replacing keeps the job's place in creation order
    return new State(m);
  }
}
