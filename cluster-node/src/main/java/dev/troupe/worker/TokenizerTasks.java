package dev.troupe.worker;

import dev.troupe.engine.core.Rejection;
import dev.troupe.engine.input.InputProcessor;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Detokenize;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Detokenized;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Tokenize;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Tokenized;

/**
 * {@code /tokenize} and {@code /detokenize} as input-executor tasks: they answer their requester
 * directly from that thread ({@code tell} is thread-safe), never touching the engine thread.
 */
final class TokenizerTasks {
  private TokenizerTasks() {}

  static Runnable tokenize(InputProcessor inputs, Tokenize t) {
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

  static Runnable detokenize(InputProcessor inputs, Detokenize d) {
    return () -> {
      try {
        d.replyTo().tell(new Detokenized(inputs.detokenize(d.tokens())));
      } catch (Rejection e) {
        d.replyTo().tell(WireUpdates.rejected(e));
      }
    };
  }
}
