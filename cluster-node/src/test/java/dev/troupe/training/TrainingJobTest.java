package dev.troupe.training;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigFactory;
import dev.troupe.protocol.cluster.TrainingConfig;
import dev.troupe.protocol.cluster.TrainingJobProtocol;
import dev.troupe.protocol.cluster.TrainingJobProtocol.Status;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.persistence.testkit.javadsl.EventSourcedBehaviorTestKit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The job entity alone with the event-sourced testkit: submission, reads, and what it does when it
 * starts again. Runs and their reports: {@link TrainingFlowTest}.
 */
class TrainingJobTest {
  static final ActorTestKit kit =
      ActorTestKit.create(
          EventSourcedBehaviorTestKit.config()
              .withFallback(ConfigFactory.parseString("pekko.actor.serialize-messages = on"))
              .withFallback(ConfigFactory.load()));

  TestProbe<TrainingQueue.Command> queue;
  EventSourcedBehaviorTestKit<TrainingJobProtocol.Command, TrainingJob.Event, JobState> job;

  @BeforeEach
  void setUp() {
    queue = kit.createTestProbe();
    TrainingJob.Links links =
        new TrainingJob.Links(
            id -> queue.ref(),
            new TrainingRun.Services(
                id -> {
                  throw new AssertionError("no run in this test");
                },
                null,
                (m, b, s, d, a) -> {},
                Duration.ofSeconds(5)),
            Duration.ofMinutes(1));
    job = EventSourcedBehaviorTestKit.create(kit.system(), TrainingJob.create("j1", null, links));
  }

  @AfterAll
  static void stop() {
    kit.shutdownTestKit();
  }

  TrainingJobProtocol.SubmitReply submit() {
    return job.<TrainingJobProtocol.SubmitReply>runCommand(
            r ->
                new TrainingJobProtocol.Submit(
                    "m1",
                    List.of("{\"trajectories\":[]}".getBytes(StandardCharsets.UTF_8)),
                    TrainingConfig.defaults(),
                    r))
        .reply();
  }

  @Test
  void aSubmittedJobAsksForItsTurnAndAsksAgainWhenItStartsAgain() {
    assertEquals(new TrainingJobProtocol.Submitted("j1"), submit());
    assertEquals(new TrainingQueue.Enqueue("j1"), queue.receiveMessage());

    var view =
        (TrainingJobProtocol.JobView)
            job.<TrainingJobProtocol.JobReply>runCommand(TrainingJobProtocol.GetJob::new).reply();
    assertEquals(Status.QUEUED, view.status());
    var page =
        (TrainingJobProtocol.EventPage)
            job.<TrainingJobProtocol.JobReply>runCommand(
                    r -> new TrainingJobProtocol.ListEvents(null, 10, r))
                .reply();
    assertTrue(page.data().isEmpty());
    queue.expectNoMessage(Duration.ofMillis(100)); // reads do not wake anything

    assertInstanceOf(TrainingJobProtocol.SubmitRejected.class, submit());

    // a crash, a drain, a hand-off: the job asks for its turn by itself, nobody has to poll
    job.restart();
    assertEquals(new TrainingQueue.Enqueue("j1"), queue.receiveMessage());
    assertEquals(
        Status.QUEUED,
        ((TrainingJobProtocol.JobView)
                job.<TrainingJobProtocol.JobReply>runCommand(TrainingJobProtocol.GetJob::new)
                    .reply())
            .status());
  }

  @Test
  void reportsOfARunTheJobDoesNotHaveAreIgnored() {
    submit();
    queue.receiveMessage();
    assertTrue(job.runCommand(new TrainingJob.RunStarted("another", 1, 2)).hasNoEvents());
    assertTrue(job.runCommand(new TrainingJob.RunFailed("another", "boom")).hasNoEvents());
    assertTrue(
        job.runCommand(new TrainingJob.StepDone("another", 0, Map.of("loss", 1.0))).hasNoEvents());
    assertInstanceOf(JobState.Queued.class, job.getState());
  }

  @Test
  void anUnknownJobGivesBackATurnAndIsNotFound() {
    assertTrue(job.runCommand(new TrainingJob.Turn("m1")).hasNoEvents());
    assertEquals(new TrainingQueue.Done("j1"), queue.receiveMessage());
    assertInstanceOf(
        TrainingJobProtocol.JobNotFound.class,
        job.<TrainingJobProtocol.JobReply>runCommand(TrainingJobProtocol.GetJob::new).reply());
    assertInstanceOf(
        TrainingJobProtocol.JobNotFound.class,
        job.<TrainingJobProtocol.JobReply>runCommand(
                r -> new TrainingJobProtocol.ListEvents(null, 1, r))
            .reply());
  }
}
