package dev.troupe.training;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigFactory;
import dev.troupe.protocol.cluster.TrainingConfig;
import dev.troupe.protocol.cluster.TrainingJobProtocol;
import dev.troupe.protocol.cluster.TrainingJobProtocol.Status;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.persistence.testkit.javadsl.EventSourcedBehaviorTestKit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The job entity with the event-sourced testkit: lifecycle, event pages, wake-ups, recovery. */
class TrainingJobTest {
  static final ActorTestKit kit =
      ActorTestKit.create(
          EventSourcedBehaviorTestKit.config()
              .withFallback(ConfigFactory.parseString("pekko.actor.serialize-messages = on"))
              .withFallback(ConfigFactory.load()));

  TestProbe<TrainingJobProtocol.TrainerCommand> trainer;
  EventSourcedBehaviorTestKit<TrainingJobProtocol.Command, TrainingJob.Event, TrainingJob.State>
      job;

  @BeforeEach
  void setUp() {
    trainer = kit.createTestProbe();
    job =
        EventSourcedBehaviorTestKit.create(
            kit.system(), TrainingJob.create("j1", id -> trainer.ref()));
  }

  @AfterAll
  static void stop() {
    kit.shutdownTestKit();
  }

  @Test
  void lifecycleEventsPagesAndRecovery() {
    var submitted =
        job.<TrainingJobProtocol.SubmitReply>runCommand(
            r ->
                new TrainingJobProtocol.Submit(
                    "m1",
                    List.of("{\"trajectories\":[]}".getBytes(StandardCharsets.UTF_8)),
                    TrainingConfig.defaults(),
                    r));
    assertEquals(new TrainingJobProtocol.Submitted("j1"), submitted.reply());
    assertEquals(new TrainingJobProtocol.Enqueue("j1"), trainer.receiveMessage());

    var view =
        job.<TrainingJobProtocol.JobReply>runCommand(TrainingJobProtocol.GetJob::new).reply();
    assertEquals(Status.QUEUED, ((TrainingJobProtocol.JobView) view).status());
    // a status read of an unfinished job wakes its trainer again
    assertEquals(new TrainingJobProtocol.Enqueue("j1"), trainer.receiveMessage());

    job.<TrainingJobProtocol.Recorded>runCommand(r -> new TrainingJobProtocol.MarkStarted(2, r));
    job.<TrainingJobProtocol.Recorded>runCommand(
        r -> new TrainingJobProtocol.RecordStep(Map.of("loss", 0.5), r));
    job.<TrainingJobProtocol.Recorded>runCommand(
        r -> new TrainingJobProtocol.RecordStep(Map.of("loss", 0.25), r));
    var ok =
        job.<TrainingJobProtocol.Recorded>runCommand(
            r -> new TrainingJobProtocol.MarkSucceeded(7, r));
    assertTrue(ok.reply().accepted());
    // finished: later reports are refused, the payload's groups are gone
    assertTrue(
        !job.<TrainingJobProtocol.Recorded>runCommand(
                r -> new TrainingJobProtocol.MarkFailed("late", r))
            .reply()
            .accepted());

    var first =
        (TrainingJobProtocol.EventPage)
            job.<TrainingJobProtocol.JobReply>runCommand(
                    r -> new TrainingJobProtocol.ListEvents(null, 2, r))
                .reply();
    assertEquals(
        List.of("training_started", "gradient_step"),
        first.data().stream().map(TrainingJobProtocol.JobEvent::type).toList());
    assertTrue(first.hasMore());
    var rest =
        (TrainingJobProtocol.EventPage)
            job.<TrainingJobProtocol.JobReply>runCommand(
                    r -> new TrainingJobProtocol.ListEvents(first.data().get(1).id(), 10, r))
                .reply();
    assertEquals(
        List.of("gradient_step", "training_ended"),
        rest.data().stream().map(TrainingJobProtocol.JobEvent::type).toList());
    assertEquals(7.0, rest.data().get(1).data().get("step"));
    trainer.expectNoMessage(); // finished jobs do not wake the trainer

    job.restart();
    var after =
        (TrainingJobProtocol.JobView)
            job.<TrainingJobProtocol.JobReply>runCommand(TrainingJobProtocol.GetJob::new).reply();
    assertEquals(Status.SUCCEEDED, after.status());
    assertEquals(7L, after.step());
    assertEquals(2, after.gradientSteps());
    var payload =
        job.<TrainingJobProtocol.PayloadReply>runCommand(TrainingJobProtocol.GetPayload::new)
            .reply();
    assertEquals(0, ((TrainingJobProtocol.Payload) payload).groups().size());
  }

  @Test
  void unknownJobsAndFailures() {
    assertInstanceOf(
        TrainingJobProtocol.JobNotFound.class,
        job.<TrainingJobProtocol.JobReply>runCommand(TrainingJobProtocol.GetJob::new).reply());
    job.<TrainingJobProtocol.SubmitReply>runCommand(
        r -> new TrainingJobProtocol.Submit("m1", List.of(), TrainingConfig.defaults(), r));
    job.<TrainingJobProtocol.Recorded>runCommand(
        r -> new TrainingJobProtocol.MarkFailed("boom", r));
    var v =
        (TrainingJobProtocol.JobView)
            job.<TrainingJobProtocol.JobReply>runCommand(TrainingJobProtocol.GetJob::new).reply();
    assertEquals(Status.FAILED, v.status());
    assertEquals("boom", v.errorMessage());
    assertNull(v.step());
    var page =
        (TrainingJobProtocol.EventPage)
            job.<TrainingJobProtocol.JobReply>runCommand(
                    r -> new TrainingJobProtocol.ListEvents(null, 20, r))
                .reply();
    assertEquals("training_failed", page.data().get(0).type());
    assertEquals("boom", page.data().get(0).errorMessage());
  }
}
