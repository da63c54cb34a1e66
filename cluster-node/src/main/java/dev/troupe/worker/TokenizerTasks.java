package dev.troupe.worker;

import dev.troupe.engine.core.Rejection;
import dev.troupe.engine.input.InputProcessor;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Detokenize;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Detokenized;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Tokenize;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Tokenized;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.function.Supplier;

/**
 * {@code /tokenize} and {@code /detokenize} as input-executor tasks: they answer their requester
 * directly from that thread ({@code tell} is thread-safe), never touching the engine thread; when
 * the executor's queue is full the requester gets the worker's overload rejection at once.
 */
final class TokenizerTasks {
  private TokenizerTasks() {}

  static void tokenize(
      Executor executor,
      InputProcessor inputs,
      ReplyBound bound,
      Tokenize t,
      Supplier<Rejection> overloaded) {
    run(
        executor,
        task(inputs, bound, t),
        () -> t.replyTo().tell(WireUpdates.rejected(overloaded.get())));
  }

  static void detokenize(
      Executor executor,
      InputProcessor inputs,
      ReplyBound bound,
      Detokenize d,
      Supplier<Rejection> overloaded) {
    run(
        executor,
        task(inputs, bound, d),
        () -> d.replyTo().tell(WireUpdates.rejected(overloaded.get())));
  }

  private static void run(Executor executor, Runnable task, Runnable refused) {
    try {
      executor.execute(task);
    } catch (RejectedExecutionException e) {
      refused.run();
    }
  }

  private static Runnable task(InputProcessor inputs, ReplyBound bound, Tokenize t) {
    return () -> {
      try {
        InputProcessor.Tokenized r =
            inputs.tokenize(
                t.messages(),
                t.prompt(),
                t.tools(),
                t.addGenerationPrompt(),
                t.continueFinalMessage(),
                t.addSpecialTokens(),
                t.chatTemplate(),
                t.chatTemplateKwargs(),
                t.returnTokenStrs());
        Tokenized reply =
            new Tokenized(WireUpdates.boxed(r.tokens()), r.tokenStrs(), r.maxModelLen());
        long estimate = 256 + 6L * r.tokens().length;
        if (r.tokenStrs() != null) for (String s : r.tokenStrs()) estimate += 8 + 3L * s.length();
        Rejection tooLarge =
            bound.refusal(t.replyTo(), reply, estimate, "Tokenize less text per request.");
        t.replyTo().tell(tooLarge == null ? reply : WireUpdates.rejected(tooLarge));
      } catch (Rejection e) {
        t.replyTo().tell(WireUpdates.rejected(e));
      }
    };
  }

  private static Runnable task(InputProcessor inputs, ReplyBound bound, Detokenize d) {
    return () -> {
      try {
        Detokenized reply = new Detokenized(inputs.detokenize(d.tokens(), d.skipSpecialTokens()));
        Rejection tooLarge =
            bound.refusal(
                d.replyTo(),
                reply,
                256 + 3L * reply.prompt().length(),
                "Detokenize fewer tokens per request.");
        d.replyTo().tell(tooLarge == null ? reply : WireUpdates.rejected(tooLarge));
      } catch (Rejection e) {
        d.replyTo().tell(WireUpdates.rejected(e));
      }
    };
  }
}
