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
      Executor executor, InputProcessor inputs, Tokenize t, Supplier<Rejection> overloaded) {
    run(executor, task(inputs, t), () -> t.replyTo().tell(WireUpdates.rejected(overloaded.get())));
  }

  static void detokenize(
      Executor executor, InputProcessor inputs, Detokenize d, Supplier<Rejection> overloaded) {
    run(executor, task(inputs, d), () -> d.replyTo().tell(WireUpdates.rejected(overloaded.get())));
  }

  private static void run(Executor executor, Runnable task, Runnable refused) {
    try {
      executor.execute(task);
    } catch (RejectedExecutionException e) {
      refused.run();
    }
  }

  private static Runnable task(InputProcessor inputs, Tokenize t) {
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
        t.replyTo()
            .tell(new Tokenized(WireUpdates.boxed(r.tokens()), r.tokenStrs(), r.maxModelLen()));
      } catch (Rejection e) {
        t.replyTo().tell(WireUpdates.rejected(e));
      }
    };
  }

  private static Runnable task(InputProcessor inputs, Detokenize d) {
    return () -> {
      try {
        d.replyTo().tell(new Detokenized(inputs.detokenize(d.tokens(), d.skipSpecialTokens())));
      } catch (Rejection e) {
        d.replyTo().tell(WireUpdates.rejected(e));
      }
    };
  }
}
