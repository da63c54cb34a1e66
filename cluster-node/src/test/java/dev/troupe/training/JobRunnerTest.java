package dev.troupe.training;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.adapters.CheckpointStore;
import dev.troupe.protocol.cluster.TrainableModelProtocol;
import dev.troupe.protocol.cluster.TrainingConfig;
import dev.troupe.protocol.cluster.TrainingJobProtocol;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The runner's failure paths: a job whose trainer was lost mid-run, and a model that is gone. */
class JobRunnerTest {
  static final ActorTestKit kit = ActorTestKit.create();
  @TempDir Path dir;

  @AfterAll
  static void stop() {
    kit.shutdownTestKit();
  }

  /**
   * A job entity stand-in answering GetPayload with {@code status}, reporting progress to a probe.
   */
  static ActorRef<TrainingJobProtocol.Command> job(
      TrainingJobProtocol.Status status, TestProbe<Object> seen) {
    return kit.spawn(
        Behaviors.receiveMessage(
            m -> {
              seen.ref().tell(m);
              if (m instanceof TrainingJobProtocol.GetPayload g)
                g.replyTo()
                    .tell(
                        new TrainingJobProtocol.Payload(
                            "j1", "m1", List.of(), TrainingConfig.defaults(), status));
              if (m instanceof TrainingJobProtocol.MarkFailed f)
                f.replyTo().tell(new TrainingJobProtocol.Recorded(true));
              if (m instanceof TrainingJobProtocol.MarkStarted f)
                f.replyTo().tell(new TrainingJobProtocol.Recorded(true));
              return Behaviors.same();
            }));
  }

  JobRunner runner(
      ActorRef<TrainingJobProtocol.Command> job, ActorRef<TrainableModelProtocol.Command> model) {
    return new JobRunner(
        kit.system(),
        id -> job,
        id -> model,
        name -> {
          throw new IllegalArgumentException("no base models in this test");
        },
        Trainer.Settings.DEFAULT,
        TrainingBackends.cpu(),
        new CheckpointStore(dir),
        (m, b, s, d, a) -> {},
        Duration.ofSeconds(5));
  }

  @Test
  void aJobThatHadStartedOnALostTrainerFailsVisibly() {
    TestProbe<Object> seen = kit.createTestProbe();
    TestProbe<TrainableModelProtocol.Command> model = kit.createTestProbe();
    runner(job(TrainingJobProtocol.Status.RUNNING, seen), model.ref()).run("j1");
    seen.expectMessageClass(TrainingJobProtocol.GetPayload.class);
    TrainingJobProtocol.MarkFailed f =
        seen.expectMessageClass(TrainingJobProtocol.MarkFailed.class);
    assertTrue(f.errorMessage().contains("lost"), f.errorMessage());
    model.expectNoMessage(Duration.ofMillis(100));
  }

  @Test
  void aFinishedJobIsLeftAlone() {
    TestProbe<Object> seen = kit.createTestProbe();
    TestProbe<TrainableModelProtocol.Command> model = kit.createTestProbe();
    runner(job(TrainingJobProtocol.Status.SUCCEEDED, seen), model.ref()).run("j1");
    seen.expectMessageClass(TrainingJobProtocol.GetPayload.class);
    seen.expectNoMessage(Duration.ofMillis(100));
  }

  @Test
  void aMissingModelFailsTheJob() {
    TestProbe<Object> seen = kit.createTestProbe();
    ActorRef<TrainableModelProtocol.Command> model =
        kit.spawn(
            Behaviors.receiveMessage(
                m -> {
                  if (m instanceof TrainableModelProtocol.Get g)
                    g.replyTo().tell(new TrainableModelProtocol.ModelNotFound("m1"));
                  return Behaviors.same();
                }));
    runner(job(TrainingJobProtocol.Status.QUEUED, seen), model).run("j1");
    seen.expectMessageClass(TrainingJobProtocol.GetPayload.class);
    TrainingJobProtocol.MarkFailed f =
        seen.expectMessageClass(TrainingJobProtocol.MarkFailed.class);
    assertEquals("model m1 not found", f.errorMessage());
  }
}
