package dev.troupe.gateway.completions;

import dev.troupe.gateway.chat.GenerationStream;
import dev.troupe.gateway.http.ApiException;
import dev.troupe.gateway.http.JsonBodies;
import dev.troupe.gateway.http.Stages;
import dev.troupe.gateway.replicas.ModelCatalog;
import dev.troupe.gateway.replicas.ServedModel;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Command;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Detokenize;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.DetokenizeReply;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Detokenized;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Failed;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.GenerationEvent;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.GenerationUpdate;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Rejected;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Started;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.NotUsed;
import org.apache.pekko.actor.typed.javadsl.AskPattern;
import org.apache.pekko.http.javadsl.model.HttpEntities;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.model.MediaTypes;
import org.apache.pekko.http.javadsl.model.StatusCodes;
import org.apache.pekko.japi.Pair;
import org.apache.pekko.stream.SharedKillSwitch;
import org.apache.pekko.stream.javadsl.Sink;
import org.apache.pekko.stream.javadsl.SinkQueueWithCancel;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.util.ByteString;

/**
 * A completion's answer from its prompts' generation events (one source per prompt, as {@code
 * Generations} runs them): folded whole, or written as server-sent events. Echoing a prompt may
 * need its text decoded (token-id prompts) and its first token's text (echoed logprobs): asked from
 * one of the model's workers ({@code Detokenize}, special tokens kept, as vLLM decodes them) once
 * the prompt's ids are known.
 *
 * <p>A prompt whose generation fails fails the whole answer, and the others are stopped ({@code
 * gone} is aborted). One instance per request.
 */
public final class CompletionAnswers {
  private final CompletionPlan plan;
  private final ServedModel model;
  private final ModelCatalog models;
  private final long created;

  public CompletionAnswers(
      CompletionPlan plan, ServedModel model, ModelCatalog models, long created) {
    this.plan = plan;
    this.model = model;
    this.models = models;
    this.created = created;
  }

  /**
   * The whole answer once every prompt's generation ended: a JSON response, or with {@code
   * wholeStream} (beam search) one event holding it, as vLLM sends a stream it does not stream.
   */
  public CompletionStage<HttpResponse> whole(
      List<Source<GenerationEvent, NotUsed>> events, SharedKillSwitch gone) {
    List<CompletableFuture<PromptOutput>> outputs = new ArrayList<>();
    for (Source<GenerationEvent, NotUsed> e : events) {
      CompletableFuture<PromptOutput> out =
          Stages.on(
              models.system(),
              e.runWith(Sink.fold(new PromptOutput(plan.n()), PromptOutput::add), models.system()));
      out.whenComplete((o, error) -> stopOthers(gone, error));
      outputs.add(out);
    }
    return CompletableFuture.allOf(outputs.toArray(CompletableFuture<?>[]::new))
        .thenCompose(
            x -> {
              List<PromptOutput> done = outputs.stream().map(CompletableFuture::join).toList();
              return echoes(done.stream().map(o -> o.started).toList())
                  .thenApply(echoes -> CompletionResponses.whole(plan, created, done, echoes));
            })
        .thenApply(
            response ->
                plan.wholeStream()
                    ? eventResponse(Source.from(CompletionChunkWriter.single(response)))
                    : JsonBodies.response(StatusCodes.OK, response));
  }

  /**
   * Server-sent events once every prompt's first event came (a prompt the worker refuses is a plain
   * HTTP error, as vLLM checks every prompt before it streams); each prompt's events are buffered
   * in a queue until then.
   */
  public CompletionStage<HttpResponse> stream(
      List<Source<GenerationEvent, NotUsed>> events, SharedKillSwitch gone) {
    List<SinkQueueWithCancel<GenerationEvent>> queues = new ArrayList<>();
    List<CompletableFuture<GenerationEvent>> firsts = new ArrayList<>();
    for (Source<GenerationEvent, NotUsed> e : events) {
      SinkQueueWithCancel<GenerationEvent> q = e.runWith(Sink.queue(), models.system());
      queues.add(q);
      CompletableFuture<GenerationEvent> first =
          Stages.on(models.system(), q.pull())
              .thenApply(
                  o -> {
                    GenerationEvent head =
                        o.orElseThrow(
                            () ->
                                ApiException.internal(
                                    "The worker ended the request without an answer."));
                    if (head instanceof Failed f) throw GenerationStream.toApiException(f);
                    return head;
                  })
              .toCompletableFuture();
      first.whenComplete((ok, error) -> stopOthers(gone, error));
      firsts.add(first);
    }
    return CompletableFuture.allOf(firsts.toArray(CompletableFuture<?>[]::new))
        .thenCompose(
            x -> {
              List<Started> started = new ArrayList<>();
              for (CompletableFuture<GenerationEvent> f : firsts)
                started.add(f.join() instanceof GenerationUpdate u ? u.started() : null);
              return echoes(started);
            })
        .thenApply(
            echoes -> {
              CompletionChunkWriter writer = new CompletionChunkWriter(plan, created, echoes);
              List<Source<Pair<Integer, GenerationEvent>, NotUsed>> tagged = new ArrayList<>();
              for (int p = 0; p < queues.size(); p++) {
                int prompt = p;
                tagged.add(
                    Source.single(firsts.get(p).join())
                        .concat(drain(queues.get(p)))
                        .map(e -> Pair.create(prompt, e)));
              }
              Source<ByteString, NotUsed> frames =
                  Source.from(tagged)
                      .flatMapMerge(tagged.size(), s -> s)
                      // one writer, after the merge: one update per engine step, as it comes
                      .mapConcat(e -> writer.onEvent(e.first(), e.second()))
                      .watchTermination(
                          (mat, done) -> {
                            // a client that left: stop every prompt's generation
                            Stages.on(models.system(), done)
                                .whenComplete((d, error) -> queues.forEach(q -> q.cancel()));
                            return mat;
                          });
              return GenerationStream.eventStream(
                  frames, writer::error, writer::isDone, plan.responseId());
            })
        .whenComplete(
            (ok, error) -> {
              if (error != null) queues.forEach(q -> q.cancel());
            });
  }

  /** A failed prompt stops the others: the request has failed. */
  private static void stopOthers(SharedKillSwitch gone, Throwable error) {
    if (error != null) gone.abort(error);
  }

  /** The rest of a prompt's events, pulled from its queue. */
  private Source<GenerationEvent, NotUsed> drain(SinkQueueWithCancel<GenerationEvent> q) {
    return Source.unfoldAsync(
        q,
        queue ->
            Stages.on(models.system(), queue.pull())
                .thenApply(o -> o.map(e -> Pair.create(queue, e))));
  }

  private static HttpResponse eventResponse(Source<ByteString, NotUsed> frames) {
    return HttpResponse.create()
        .withEntity(
            HttpEntities.createChunked(MediaTypes.TEXT_EVENT_STREAM.toContentType(), frames));
  }

  /** Per prompt what echoing it needs (nothing without echo). */
  private CompletionStage<List<Echo>> echoes(List<Started> started) {
    List<CompletableFuture<Echo>> out = new ArrayList<>();
    for (int p = 0; p < plan.prompts().size(); p++)
      out.add(echo(plan.prompts().get(p), started.get(p)).toCompletableFuture());
    return CompletableFuture.allOf(out.toArray(CompletableFuture<?>[]::new))
        .thenApply(x -> out.stream().map(CompletableFuture::join).toList());
  }

  private CompletionStage<Echo> echo(CompletionPlan.Prompt prompt, Started started) {
    if (!plan.echo()) return CompletableFuture.completedFuture(Echo.NONE);
    // vLLM: with return_token_ids the echoed text is empty (the ids say it)
    CompletionStage<String> text =
        plan.returnTokenIds()
            ? CompletableFuture.completedFuture("")
            : prompt.text() != null
                ? CompletableFuture.completedFuture(prompt.text())
                : decode(prompt.tokenIds());
    List<Integer> ids =
        started != null && started.promptTokenIds() != null
            ? started.promptTokenIds()
            : prompt.tokenIds();
    CompletionStage<String> first;
    if (plan.logprobs() == null || ids == null || ids.isEmpty())
      first = CompletableFuture.completedFuture(null);
    else if (plan.tokenIdsAsText())
      first = CompletableFuture.completedFuture("token_id:" + ids.get(0));
    else first = decode(List.of(ids.get(0)));
    return text.thenCombine(first, Echo::new);
  }

  /** Token ids as text, special tokens kept, by one of the model's workers. */
  private CompletionStage<String> decode(List<Integer> ids) {
    return Stages.on(
            models.system(),
            AskPattern.<Command, DetokenizeReply>ask(
                models.replicas().any(model),
                replyTo -> new Detokenize(ids, false, replyTo),
                models.askTimeout(),
                models.system().scheduler()))
        .handle(
            (reply, error) -> {
              if (error != null) throw GenerationStream.toApiException(error);
              if (reply instanceof Rejected r)
                throw GenerationStream.toApiException(
                    new Failed("-", r.kind(), r.message(), r.param()));
              return ((Detokenized) reply).prompt();
            });
  }
}
