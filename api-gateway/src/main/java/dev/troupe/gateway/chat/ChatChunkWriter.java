package dev.troupe.gateway.chat;

import dev.troupe.gateway.http.ApiException;
import dev.troupe.gateway.http.JsonBodies;
import dev.troupe.protocol.api.chat.ChatCompletionChunk;
import dev.troupe.protocol.api.chat.ChatCompletionChunk.ChunkChoice;
import dev.troupe.protocol.api.chat.ChatCompletionChunk.Delta;
import dev.troupe.protocol.api.chat.Usage;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.ChoiceDelta;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.ChoiceFinished;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Completed;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Failed;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.GenerationEvent;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Started;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.TokenDelta;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.pekko.util.ByteString;

/**
 * Turns a generation's events into server-sent events in vLLM's chunk format (its stream
 * generator): per choice a first chunk with the role, an echo chunk when asked, one chunk per step
 * with new text, {@code finish_reason} on the chunk holding the choice's last text (or an empty
 * delta if there is none), then the usage chunk ({@code choices: []}) when usage is on, and {@code
 * data: [DONE]}. A failure after the stream opened becomes a {@code data: {"error":…}} event before
 * {@code [DONE]}.
 *
 * <p>Events come in small groups (those that arrived together): a choice's last content chunk is
 * held back to the end of its group, so that a {@link ChoiceFinished} sent right after the final
 * {@link TokenDelta} of a step lands on that same chunk. Not thread-safe: one per request.
 */
public final class ChatChunkWriter {
  public static final ByteString DONE =
      ByteString.fromString("data: [DONE]\n\n", StandardCharsets.UTF_8);

  private final ChatPlan plan;
  private final long created;
  private final Map<Integer, ChunkChoice> pending = new TreeMap<>();
  private final Map<Integer, Integer> completionTokens = new HashMap<>();
  private int promptTokens;
  private boolean done;

  public ChatChunkWriter(ChatPlan plan, long createdEpochSeconds) {
    this.plan = plan;
    this.created = createdEpochSeconds;
  }

  /** SSE frames for a group of events that arrived together. */
  public List<ByteString> onEvents(List<GenerationEvent> group) {
    List<ByteString> out = new ArrayList<>();
    for (GenerationEvent e : group) {
      if (done) break;
      if (e instanceof Started s) onStarted(s, out);
      else if (e instanceof TokenDelta d) onDelta(d, out);
      else if (e instanceof ChoiceFinished f) onFinished(f, out);
      else if (e instanceof Completed c) onCompleted(c, out);
      else if (e instanceof Failed f) out.addAll(error(GenerationStream.toApiException(f)));
    }
    flushPending(out);
    return out;
  }

  /** The error event and {@code [DONE]} for a failure after the stream opened. */
  public List<ByteString> error(ApiException e) {
    List<ByteString> out = new ArrayList<>();
    if (done) return out;
    flushPending(out);
    out.add(frame(e.body()));
    out.add(DONE);
    done = true;
    return out;
  }

  public boolean isDone() {
    return done;
  }

  private void onStarted(Started s, List<ByteString> out) {
    promptTokens = s.promptTokenIds().size();
    int n = plan.generation().sampling().n();
    for (int i = 0; i < n; i++) {
      completionTokens.put(i, 0);
      out.add(
          frame(
              chunk(
                  new ChunkChoice(i, Delta.role(plan.responseRole()), null, null, null, null),
                  plan.returnTokenIds() ? s.promptTokenIds() : null)));
    }
    if (plan.echoText() != null)
      for (int i = 0; i < n; i++)
        out.add(
            frame(
                chunk(
                    new ChunkChoice(i, Delta.content(plan.echoText()), null, null, null, null),
                    null)));
  }

  private void onDelta(TokenDelta d, List<ByteString> out) {
    for (ChoiceDelta c : d.choices()) {
      if (c.text().isEmpty() && c.tokenIds().isEmpty()) continue; // nothing new (vLLM skips these)
      ChunkChoice previous = pending.remove(c.index());
      if (previous != null) out.add(frame(chunk(previous, null)));
      completionTokens.merge(c.index(), c.tokenIds().size(), Integer::sum);
      pending.put(
          c.index(),
          new ChunkChoice(
              c.index(),
              Delta.content(c.text()),
              plan.logprobs() && c.logprobs() != null
                  ? ChatResponseFolder.logprobs(c.logprobs(), plan.topLogprobs())
                  : null,
              null,
              null,
              plan.returnTokenIds() ? c.tokenIds() : null));
    }
  }

  private void onFinished(ChoiceFinished f, List<ByteString> out) {
    ChunkChoice last = pending.remove(f.index());
    String reason = f.finishReason().wireName();
    ChunkChoice finishing =
        last == null
            ? new ChunkChoice(f.index(), Delta.empty(), null, reason, f.stopReason(), null)
            : new ChunkChoice(
                last.index(),
                last.delta(),
                last.logprobs(),
                reason,
                f.stopReason(),
                last.tokenIds());
    out.add(frame(chunk(finishing, null)));
  }

  private void onCompleted(Completed c, List<ByteString> out) {
    flushPending(out);
    if (plan.includeUsage()) {
      var u = c.usage();
      out.add(
          frame(
              new ChatCompletionChunk(
                  plan.responseId(),
                  ChatCompletionChunk.OBJECT,
                  created,
                  plan.model(),
                  List.of(),
                  Usage.of(u.promptTokens(), u.completionTokens(), u.cachedPromptTokens()),
                  null,
                  plan.systemFingerprint())));
    }
    out.add(DONE);
    done = true;
  }

  private void flushPending(List<ByteString> out) {
    for (ChunkChoice c : pending.values()) out.add(frame(chunk(c, null)));
    pending.clear();
  }

  private ChatCompletionChunk chunk(ChunkChoice choice, List<Integer> promptTokenIds) {
    Usage usage = null;
    if (plan.continuousUsage()) {
      int completion = completionTokens.getOrDefault(choice.index(), 0);
      usage = Usage.of(promptTokens, completion, 0);
    }
    return new ChatCompletionChunk(
        plan.responseId(),
        ChatCompletionChunk.OBJECT,
        created,
        plan.model(),
        List.of(choice),
        usage,
        promptTokenIds,
        plan.systemFingerprint());
  }

  /** One SSE event: {@code data: <json>\n\n}. */
  static ByteString frame(Object value) {
    byte[] json = JsonBodies.bytes(value);
    return ByteString.fromString("data: ", StandardCharsets.UTF_8)
        .concat(ByteString.fromArray(json))
        .concat(ByteString.fromString("\n\n", StandardCharsets.UTF_8));
  }
}
