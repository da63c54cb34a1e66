package dev.troupe.gateway.preview.training;

import dev.troupe.gateway.preview.PreviewContext;
import dev.troupe.protocol.api.preview.training.TrainingJobSummary;
import dev.troupe.protocol.cluster.TrainingJobIndexProtocol;
import dev.troupe.protocol.cluster.TrainingJobIndexProtocol.Entry;
import dev.troupe.protocol.cluster.TrainingJobIndexProtocol.JobPage;
import dev.troupe.protocol.cluster.TrainingJobProtocol;
import dev.troupe.protocol.cluster.TrainingJobProtocol.JobView;
import dev.troupe.protocol.cluster.TrainingJobProtocol.Status;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * Training jobs as lists show them ({@code GET /v1/preview/training-jobs}, the cluster view, the
 * training metrics): the {@code TrainingJobIndex} gives the jobs in creation order, each unfinished
 * job's entity its status (a job that has finished is told to the index, so later lists read it
 * there), and a listed job's events the metrics of its latest gradient step.
 *
 * <p>A listed job whose entity holds nothing — its submission never arrived — is skipped, and
 * forgotten by the index once it is older than {@link #FORGET_AFTER_MILLIS} (a younger one may be a
 * submission still on its way).
 */
public final class TrainingJobs {
  /** Index entries read per ask while scanning. */
  static final int SCAN = 100;

  /** Events read per ask while looking for a job's latest gradient step. */
  static final int EVENTS_PAGE = 100;

  static final long FORGET_AFTER_MILLIS = 60_000;

  private final PreviewContext ctx;

  public TrainingJobs(PreviewContext ctx) {
    this.ctx = ctx;
  }

  /** A page of jobs and whether more follow. */
  public record Page(List<TrainingJobSummary> data, boolean hasMore) {}

  /**
   * Up to {@code limit} jobs after job {@code after} (null: from the first), in creation order or
   * newest first, only those in {@code status} when it is not null.
   */
  public CompletionStage<Page> list(String after, int limit, boolean descending, Status status) {
    return scan(after, limit, descending, status, new ArrayList<>())
        .thenCompose(
            found -> {
              boolean more = found.size() > limit;
              List<JobView> page = more ? found.subList(0, limit) : found;
              List<CompletableFuture<TrainingJobSummary>> summaries = new ArrayList<>();
              for (JobView v : page) summaries.add(summary(v).toCompletableFuture());
              return CompletableFuture.allOf(summaries.toArray(CompletableFuture[]::new))
                  .thenApply(
                      done ->
                          new Page(summaries.stream().map(CompletableFuture::join).toList(), more));
            });
  }

  /** How many jobs there are in each status (every status present, zero or not). */
  public CompletionStage<Map<Status, Integer>> counts() {
    Map<Status, Integer> counts = new EnumMap<>(Status.class);
    for (Status s : Status.values()) counts.put(s, 0);
    return countFrom(null, counts);
  }

  private CompletionStage<Map<Status, Integer>> countFrom(
      String after, Map<Status, Integer> counts) {
    return indexPage(after, false)
        .thenCompose(
            page ->
                statuses(page.data())
                    .thenCompose(
                        views -> {
                          for (JobView v : views) counts.merge(v.status(), 1, Integer::sum);
                          if (!page.hasMore() || page.data().isEmpty())
                            return CompletableFuture.completedFuture(counts);
                          return countFrom(last(page), counts);
                        }));
  }

  /** Collects matching jobs until one past {@code limit} or the index's end. */
  private CompletionStage<List<JobView>> scan(
      String after, int limit, boolean descending, Status status, List<JobView> found) {
    return indexPage(after, descending)
        .thenCompose(
            page -> {
              List<Entry> candidates = new ArrayList<>();
              for (Entry e : page.data())
                if (status == null || e.finalStatus() == null || e.finalStatus() == status)
                  candidates.add(e);
              return statuses(candidates)
                  .thenCompose(
                      views -> {
                        for (JobView v : views) {
                          if (status != null && v.status() != status) continue;
                          found.add(v);
                          if (found.size() > limit) return CompletableFuture.completedFuture(found);
                        }
                        if (!page.hasMore() || page.data().isEmpty())
                          return CompletableFuture.completedFuture(found);
                        return scan(last(page), limit, descending, status, found);
                      });
            });
  }

  private CompletionStage<JobPage> indexPage(String after, boolean descending) {
    return ctx.askJobIndex(r -> new TrainingJobIndexProtocol.ListJobs(after, SCAN, descending, r));
  }

  private static String last(JobPage page) {
    return page.data().get(page.data().size() - 1).jobId();
  }

  /**
   * The jobs' views in the entries' order: a finished job the index knows is not asked again (its
   * view is read when it is listed); jobs that do not exist are left out.
   */
  private CompletionStage<List<JobView>> statuses(List<Entry> entries) {
    List<CompletableFuture<JobView>> views = new ArrayList<>();
    for (Entry e : entries) views.add(view(e).toCompletableFuture());
    return CompletableFuture.allOf(views.toArray(CompletableFuture[]::new))
        .thenApply(
            done -> views.stream().map(CompletableFuture::join).filter(v -> v != null).toList());
  }

  /** A job's view from its entity; null when it does not exist. */
  private CompletionStage<JobView> view(Entry e) {
    return ctx.<TrainingJobProtocol.JobReply>askJob(e.jobId(), TrainingJobProtocol.GetJob::new)
        .thenApply(
            reply -> {
              if (reply instanceof JobView v) {
                if (e.finalStatus() == null && TrainingJobIndexProtocol.finished(v.status()))
                  ctx.tellJobIndex(new TrainingJobIndexProtocol.Settle(v.id(), v.status()));
                return v;
              }
              if (System.currentTimeMillis() - e.createdAtMillis() > FORGET_AFTER_MILLIS)
                ctx.tellJobIndex(new TrainingJobIndexProtocol.Forget(e.jobId()));
              return null;
            });
  }

  /** The job's status fields and the metrics of its latest gradient step. */
  public CompletionStage<TrainingJobSummary> summary(JobView v) {
    var status = GetTrainingJobRoute.toResponse(v, v.id());
    if (v.gradientSteps() == 0)
      return CompletableFuture.completedFuture(TrainingJobSummary.of(status, Map.of()));
    return latestStep(v.id(), null, Map.of())
        .thenApply(latest -> TrainingJobSummary.of(status, latest));
  }

  private CompletionStage<Map<String, Double>> latestStep(
      String jobId, String after, Map<String, Double> latest) {
    return ctx.<TrainingJobProtocol.JobReply>askJob(
            jobId, r -> new TrainingJobProtocol.ListEvents(after, EVENTS_PAGE, r))
        .thenCompose(
            reply -> {
              if (!(reply instanceof TrainingJobProtocol.EventPage page) || page.data().isEmpty())
                return CompletableFuture.completedFuture(latest);
              Map<String, Double> now = latest;
              for (TrainingJobProtocol.JobEvent e : page.data())
                if (e.type().equals(TrainingJobProtocol.GRADIENT_STEP))
                  now = new LinkedHashMap<>(e.data());
              if (!page.hasMore()) return CompletableFuture.completedFuture(now);
              return latestStep(jobId, page.data().get(page.data().size() - 1).id(), now);
            });
  }
}
