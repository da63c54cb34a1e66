package dev.troupe.training;

import dev.troupe.protocol.cluster.TrainableModelProtocol;
import dev.troupe.protocol.cluster.TrainableModelProtocol.ModelFound;
import dev.troupe.protocol.cluster.TrainableModelProtocol.ModelReply;
import dev.troupe.protocol.cluster.TrainingConfig;
import dev.troupe.protocol.cluster.TrainingJobProtocol;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletionException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Function;
import org.apache.pekko.actor.NoSerializationVerificationNeeded;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.PostStop;
import org.apache.pekko.actor.typed.RecipientRef;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.BehaviorBuilder;
import org.apache.pekko.actor.typed.javadsl.Behaviors;

/**
 * One run of one training job, on the job's node (a child of its {@link TrainingJob}): read the
 * model's latest checkpoint, train the next step on the node's training thread ({@link Trainers}),
 * list the checkpoint with the model, announce it to the model's workers — and report each stage to
 * the job as a message ({@link TrainingJob.RunStarted}, {@link TrainingJob.StepDone}, then {@link
 * TrainingJob.RunSucceeded} or {@link TrainingJob.RunFailed}). The run asks the model twice and
 * tells each worker once, however many optimizer steps it takes.
 *
 * <p>Stopped (its job stopped, moved or restarted), it stops training at the next optimizer step
 * without storing anything.
 */
public final class TrainingRun {

  public interface Command {}

  private record ModelRead(ModelReply reply, Throwable error)
      implements Command, NoSerializationVerificationNeeded {}

  private record Trained(Trainer.Result result, Throwable error)
      implements Command, NoSerializationVerificationNeeded {}

  private record Listed(ModelReply reply, Throwable error)
      implements Command, NoSerializationVerificationNeeded {}

  /**
   * What to run.
   *
   * @param runId tags every report, so the job tells this run's reports from an earlier one's
   * @param step the checkpoint step the job recorded when it started, 0 when it has not started
   */
  public record Plan(
      String jobId,
      String runId,
      String modelId,
      List<byte[]> groups,
      TrainingConfig config,
      long step) {
    public Plan {
      groups = List.copyOf(groups);
    }
  }

  /**
   * What runs use.
   *
   * @param models the {@code TrainableModel} of a model id
   * @param checkpoints told about every listed checkpoint ({@link ReplicaAnnouncer} in production)
   * @param askTimeout how long the model has to answer
   */
  public record Services(
      Function<String, RecipientRef<TrainableModelProtocol.Command>> models,
      Trainers trainers,
      CheckpointListener checkpoints,
      Duration askTimeout) {}

  private final ActorContext<Command> context;
  private final Plan plan;
  private final ActorRef<TrainingJobProtocol.Command> job;
  private final Services services;
  private final AtomicBoolean stopped = new AtomicBoolean();

  public static Behavior<Command> create(
      Plan plan, ActorRef<TrainingJobProtocol.Command> job, Services services) {
    return Behaviors.setup(ctx -> new TrainingRun(ctx, plan, job, services).readModel());
  }

  private TrainingRun(
      ActorContext<Command> context,
      Plan plan,
      ActorRef<TrainingJobProtocol.Command> job,
      Services services) {
    this.context = context;
    this.plan = plan;
    this.job = job;
    this.services = services;
  }

  private Behavior<Command> readModel() {
    context.ask(
        ModelReply.class,
        services.models().apply(plan.modelId()),
        services.askTimeout(),
        TrainableModelProtocol.Get::new,
        ModelRead::new);
    return phase().onMessage(ModelRead.class, this::onModelRead).build();
  }

  private Behavior<Command> onModelRead(ModelRead read) {
    if (read.error() != null) return fail("the model could not be read: " + reason(read.error()));
    if (!(read.reply() instanceof ModelFound found))
      return fail("model " + plan.modelId() + " not found");
    long latest = found.latest().step();
    if (plan.step() > 0 && latest >= plan.step()) return alreadyListed(found);
    Trainers.Job train =
        new Trainers.Job(
            plan.modelId(),
            found.info().baseModel(),
            latest,
            found.latest().artifact(),
            plan.groups(),
            plan.config());
    context.pipeToSelf(
        services.trainers().train(train, progress(latest + 1), stopped::get), Trained::new);
    String baseModel = found.info().baseModel();
    return phase().onMessage(Trained.class, t -> onTrained(t, baseModel)).build();
  }

  /** Reports go straight to the job from the training thread: both are on this node. */
  private Trainer.Listener progress(long step) {
    return new Trainer.Listener() {
      @Override
      public void started(int numSequences) {
        job.tell(new TrainingJob.RunStarted(plan.runId(), step, numSequences));
      }

      @Override
      public void gradientStep(int index, Map<String, Double> metrics) {
        job.tell(new TrainingJob.StepDone(plan.runId(), index, metrics));
      }
    };
  }

  /**
   * An earlier run of this job listed its checkpoint and stopped before the job recorded it: the
   * step is done (its adapter is read from the checkpoint by the workers).
   */
  private Behavior<Command> alreadyListed(ModelFound found) {
    if (found.latest().step() != plan.step())
      return fail(
          "checkpoint step "
              + found.latest().step()
              + " was listed while this job trained step "
              + plan.step());
    announce(found.info().baseModel(), plan.step(), Path.of(found.latest().artifact()), null);
    return succeed(plan.step());
  }

  private Behavior<Command> onTrained(Trained t, String baseModel) {
    if (t.error() != null) return fail(reason(t.error()));
    Trainer.Result r = t.result();
    context.ask(
        ModelReply.class,
        services.models().apply(plan.modelId()),
        services.askTimeout(),
        replyTo ->
            new TrainableModelProtocol.AddCheckpoint(
                r.step(), r.metrics(), r.checkpoint().toString(), replyTo),
        Listed::new);
    return phase().onMessage(Listed.class, l -> onListed(l, r, baseModel)).build();
  }

  private Behavior<Command> onListed(Listed l, Trainer.Result r, String baseModel) {
    if (l.error() != null) return fail("the checkpoint was not listed: " + reason(l.error()));
    if (!(l.reply() instanceof ModelFound))
      return fail("the checkpoint was not listed: " + l.reply());
    announce(baseModel, r.step(), r.checkpoint(), r.adapter());
    context
        .getLog()
        .info("Training job {} stored step {} of model {}", plan.jobId(), r.step(), plan.modelId());
    return succeed(r.step());
  }

  private void announce(String baseModel, long step, Path dir, dev.troupe.engine.LoraAdapter a) {
    try {
      services.checkpoints().published(plan.modelId(), baseModel, step, dir, a);
    } catch (RuntimeException e) {
      // workers also read the checkpoint when a request names it: the job still succeeded
      context.getLog().warn("Announcing step {} of model {} failed", step, plan.modelId(), e);
    }
  }

  private Behavior<Command> succeed(long step) {
    job.tell(new TrainingJob.RunSucceeded(plan.runId(), step));
    return done();
  }

  private Behavior<Command> fail(String message) {
    context.getLog().warn("Training job {} failed: {}", plan.jobId(), message);
    job.tell(new TrainingJob.RunFailed(plan.runId(), message));
    return done();
  }

  /** Reported: the job stops this run once it has recorded the end. */
  private Behavior<Command> done() {
    return Behaviors.ignore();
  }

  /** A stage's behaviour: whatever it waits for, a stop cancels the training. */
  private BehaviorBuilder<Command> phase() {
    return Behaviors.receive(Command.class)
        .onSignal(
            PostStop.class,
            s -> {
              stopped.set(true);
              return Behaviors.same();
            });
  }

  private static String reason(Throwable t) {
    Throwable c = t instanceof CompletionException && t.getCause() != null ? t.getCause() : t;
    return c.getMessage() == null ? c.toString() : c.getMessage();
  }
}
