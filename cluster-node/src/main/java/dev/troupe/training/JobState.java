package dev.troupe.training;

import com.fasterxml.jackson.annotation.JsonSubTypes;
import com.fasterxml.jackson.annotation.JsonTypeInfo;
import dev.troupe.protocol.CborSerializable;
import dev.troupe.protocol.cluster.TrainingConfig;
import dev.troupe.protocol.cluster.TrainingJobProtocol;
import dev.troupe.protocol.cluster.TrainingJobProtocol.EventPage;
import dev.troupe.protocol.cluster.TrainingJobProtocol.JobEvent;
import dev.troupe.protocol.cluster.TrainingJobProtocol.JobView;
import dev.troupe.protocol.cluster.TrainingJobProtocol.ListEvents;
import dev.troupe.protocol.cluster.TrainingJobProtocol.Status;
import dev.troupe.training.TrainingJob.JobFailed;
import dev.troupe.training.TrainingJob.JobStarted;
import dev.troupe.training.TrainingJob.JobSubmitted;
import dev.troupe.training.TrainingJob.JobSucceeded;
import dev.troupe.training.TrainingJob.StepCompleted;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The lifecycle of a {@link TrainingJob}: {@link Empty} → {@link Queued} → {@link Running} → {@link
 * Succeeded} | {@link Failed} (a job that cannot start fails from {@code Queued}). Each state holds
 * what it needs and makes the next from a journal event; the groups to train are dropped once the
 * job is finished.
 */
@JsonTypeInfo(use = JsonTypeInfo.Id.NAME, property = "state")
@JsonSubTypes({
  @JsonSubTypes.Type(value = JobState.Empty.class, name = "empty"),
  @JsonSubTypes.Type(value = JobState.Queued.class, name = "queued"),
  @JsonSubTypes.Type(value = JobState.Running.class, name = "running"),
  @JsonSubTypes.Type(value = JobState.Succeeded.class, name = "succeeded"),
  @JsonSubTypes.Type(value = JobState.Failed.class, name = "failed")
})
public sealed interface JobState extends CborSerializable {

  /** A job that exists, whatever its state. */
  sealed interface Known extends JobState {
    String modelId();

    /** The client-visible stream, in order. */
    List<JobEvent> events();

    JobView view(String id);

    default EventPage page(ListEvents cmd) {
      List<JobEvent> events = events();
      int from = 0;
      if (cmd.after() != null) {
        from = events.size(); // an unknown cursor reads as "nothing after it"
        for (int i = 0; i < events.size(); i++)
          if (events.get(i).id().equals(cmd.after())) from = i + 1;
      }
      int to = Math.min(events.size(), from + cmd.limit());
      return new EventPage(events.subList(from, to), to < events.size());
    }
  }

  /** A job that has not finished: it holds its groups and waits for, or has, its model's turn. */
  sealed interface Unfinished extends Known {
    List<byte[]> groups();

    TrainingConfig config();

    Failed failed(JobFailed e);
  }

  /** A finished job: what it reports no longer changes. */
  sealed interface Finished extends Known {}

  /** No job with this id. */
  record Empty() implements JobState {
    Queued submitted(JobSubmitted e) {
      return new Queued(e.modelId(), e.groups(), e.config(), e.atMillis());
    }
  }

  /** Waiting for its model's turn (jobs of one model train one at a time, in arrival order). */
  record Queued(String modelId, List<byte[]> groups, TrainingConfig config, long createdAtMillis)
      implements Unfinished {
    public Queued {
      groups = List.copyOf(groups);
    }

    @Override
    public List<JobEvent> events() {
      return List.of();
    }

    Running started(JobStarted e) {
      JobEvent started =
          new JobEvent(
              e.eventId(),
              TrainingJobProtocol.TRAINING_STARTED,
              Map.of("num_sequences", (double) e.numSequences()),
              null,
              e.atMillis());
      return new Running(
          modelId,
          groups,
          config,
          e.step(),
          e.numSequences(),
          List.of(started),
          createdAtMillis,
          e.atMillis());
    }

    @Override
    public Failed failed(JobFailed e) {
      return new Failed(modelId, null, List.of(), e, createdAtMillis, null);
    }

    @Override
    public JobView view(String id) {
      return new JobView(
          id, modelId, Status.QUEUED, null, null, 0, null, createdAtMillis, null, null);
    }
  }

  /**
   * Training: {@code events} are {@code training_started} and one {@code gradient_step} per
   * optimizer step reported so far.
   *
   * @param step the checkpoint step this job trains (0: not known, a job started before it was
   *     recorded: the step after the model's latest)
   */
  record Running(
      String modelId,
      List<byte[]> groups,
      TrainingConfig config,
      long step,
      int numSequences,
      List<JobEvent> events,
      long createdAtMillis,
      long startedAtMillis)
      implements Unfinished {
    public Running {
      groups = List.copyOf(groups);
      events = List.copyOf(events);
    }

    /** Optimizer steps reported so far. */
    int gradientSteps() {
      return events.size() - 1;
    }

    Running stepped(StepCompleted e) {
      List<JobEvent> more = new ArrayList<>(events);
      more.add(
          new JobEvent(
              e.eventId(), TrainingJobProtocol.GRADIENT_STEP, e.metrics(), null, e.atMillis()));
      return new Running(
          modelId, groups, config, step, numSequences, more, createdAtMillis, startedAtMillis);
    }

    Succeeded succeeded(JobSucceeded e) {
      List<JobEvent> more = new ArrayList<>(events);
      more.add(
          new JobEvent(
              e.eventId(),
              TrainingJobProtocol.TRAINING_ENDED,
              Map.of("step", (double) e.step()),
              null,
              e.atMillis()));
      return new Succeeded(
          modelId,
          e.step(),
          numSequences,
          gradientSteps(),
          more,
          createdAtMillis,
          startedAtMillis,
          e.atMillis());
    }

    @Override
    public Failed failed(JobFailed e) {
      return new Failed(modelId, numSequences, events, e, createdAtMillis, startedAtMillis);
    }

    @Override
    public JobView view(String id) {
      return new JobView(
          id,
          modelId,
          Status.RUNNING,
          null,
          numSequences,
          gradientSteps(),
          null,
          createdAtMillis,
          startedAtMillis,
          null);
    }
  }

  /** Trained, its checkpoint {@code step} listed with the model. */
  record Succeeded(
      String modelId,
      long step,
      int numSequences,
      int gradientSteps,
      List<JobEvent> events,
      long createdAtMillis,
      long startedAtMillis,
      long finishedAtMillis)
      implements Finished {
    public Succeeded {
      events = List.copyOf(events);
    }

    @Override
    public JobView view(String id) {
      return new JobView(
          id,
          modelId,
          Status.SUCCEEDED,
          step,
          numSequences,
          gradientSteps,
          null,
          createdAtMillis,
          startedAtMillis,
          finishedAtMillis);
    }
  }

  /**
   * Failed with {@code errorMessage}; {@code numSequences} and {@code startedAtMillis} are null
   * when it failed before training started.
   */
  record Failed(
      String modelId,
      Integer numSequences,
      int gradientSteps,
      String errorMessage,
      List<JobEvent> events,
      long createdAtMillis,
      Long startedAtMillis,
      long finishedAtMillis)
      implements Finished {
    public Failed {
      events = List.copyOf(events);
    }

    Failed(
        String modelId,
        Integer numSequences,
        List<JobEvent> before,
        JobFailed e,
        long createdAtMillis,
        Long startedAtMillis) {
      this(
          modelId,
          numSequences,
          Math.max(0, before.size() - 1),
          e.errorMessage(),
          append(
              before,
              new JobEvent(
                  e.eventId(),
                  TrainingJobProtocol.TRAINING_FAILED,
                  Map.of(),
                  e.errorMessage(),
                  e.atMillis())),
          createdAtMillis,
          startedAtMillis,
          e.atMillis());
    }

    private static List<JobEvent> append(List<JobEvent> events, JobEvent e) {
      List<JobEvent> more = new ArrayList<>(events);
      more.add(e);
      return more;
    }

    @Override
    public JobView view(String id) {
      return new JobView(
          id,
          modelId,
          Status.FAILED,
          null,
          numSequences,
          gradientSteps,
          errorMessage,
          createdAtMillis,
          startedAtMillis,
          finishedAtMillis);
    }
  }
}
