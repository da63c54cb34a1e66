package dev.troupe.gateway.completions;

import dev.troupe.gateway.chat.ChatResponseFolder;
import dev.troupe.gateway.chat.GenerationStream;
import dev.troupe.protocol.api.chat.Usage;
import dev.troupe.protocol.api.completions.CompletionLogprobs;
import dev.troupe.protocol.api.completions.CompletionResponse;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.LogprobEntry;
import java.util.ArrayList;
import java.util.List;

/**
 * The non-streaming answer (vLLM's {@code request_output_to_completion_response}): per prompt in
 * order, per choice, the text (the echoed prompt first), the logprobs of its tokens (the prompt's
 * first), finish and stop reasons, token ids and prompt logprobs when asked; the usage over every
 * prompt.
 */
final class CompletionResponses {
  private CompletionResponses() {}

  static CompletionResponse whole(
      CompletionPlan plan, long created, List<PromptOutput> outputs, List<Echo> echoes) {
    List<CompletionResponse.Choice> choices = new ArrayList<>();
    int promptTokens = 0;
    int completionTokens = 0;
    int cached = 0;
    java.util.Map<String, Object> kvTransferParams = null;
    for (int p = 0; p < outputs.size(); p++) {
      PromptOutput o = outputs.get(p);
      if (!o.complete())
        throw GenerationStream.toApiException(
            new IllegalStateException("generation ended without its last update"));
      Echo echo = echoes.get(p);
      List<Integer> promptIds = o.started == null ? null : o.started.promptTokenIds();
      List<LogprobEntry> promptLogprobs = o.started == null ? null : o.started.promptLogprobs();
      for (PromptOutput.Choice c : o.choices.values()) {
        String text = c.text.toString();
        List<Integer> ids = c.tokenIds;
        List<LogprobEntry> logprobs = c.logprobs;
        if (plan.echo()) {
          text = plan.echoOnly() ? echo.promptText() : echo.promptText() + text;
          ids = joined(promptIds, plan.echoOnly() ? List.of() : c.tokenIds);
          logprobs = joined(promptLogprobs, plan.echoOnly() ? List.of() : c.logprobs);
        }
        CompletionLogprobs lp =
            plan.logprobs() == null
                ? null
                : LegacyLogprobs.of(ids, logprobs, plan.logprobs(), 0, echo.firstToken());
        choices.add(
            new CompletionResponse.Choice(
                choices.size(),
                text,
                lp,
                c.finishReason,
                c.stopReason,
                plan.returnTokenIds() ? List.copyOf(c.tokenIds) : null,
                promptLogprobs == null ? null : ChatResponseFolder.promptLogprobs(promptLogprobs),
                plan.returnTokenIds() ? promptIds : null));
      }
      promptTokens += o.usage.promptTokens();
      completionTokens += o.usage.completionTokens();
      cached += o.usage.cachedPromptTokens();
      if (o.kvHandle != null) kvTransferParams = o.kvHandle.toParams(); // one prompt only
    }
    return new CompletionResponse(
        plan.responseId(),
        CompletionResponse.OBJECT,
        created,
        plan.model(),
        choices,
        null,
        plan.systemFingerprint(),
        Usage.of(promptTokens, completionTokens, cached),
        kvTransferParams);
  }

  /** {@code a} then {@code b}; null entries kept (a prompt's first logprob is null). */
  static <T> List<T> joined(List<T> a, List<T> b) {
    List<T> out = new ArrayList<>((a == null ? 0 : a.size()) + b.size());
    if (a != null) out.addAll(a);
    out.addAll(b);
    return out;
  }
}
