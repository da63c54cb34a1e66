package dev.troupe.gateway.routes;

import static org.apache.pekko.http.javadsl.server.Directives.completeWithFuture;
import static org.apache.pekko.http.javadsl.server.Directives.path;
import static org.apache.pekko.http.javadsl.server.Directives.post;

import dev.troupe.gateway.chat.ChatRequestMapper;
import dev.troupe.gateway.http.ApiException;
import dev.troupe.gateway.http.ApiRoute;
import dev.troupe.gateway.http.JsonBodies;
import dev.troupe.gateway.http.Stages;
import dev.troupe.gateway.replicas.ModelCatalog;
import dev.troupe.gateway.replicas.ServedModel;
import dev.troupe.protocol.api.tokenize.TokenizeRequest;
import dev.troupe.protocol.api.tokenize.TokenizeResponse;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Command;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Rejected;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Tokenize;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.TokenizeReply;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Tokenized;
import dev.troupe.protocol.cluster.RequestLimits;
import java.util.function.Function;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.javadsl.AskPattern;
import org.apache.pekko.http.javadsl.model.StatusCodes;
import org.apache.pekko.http.javadsl.server.Route;

/**
 * {@code POST /tokenize} (vLLM's shape, outside {@code /v1}): a plain {@code prompt} or chat {@code
 * messages} rendered with the model's template, tokenized by a worker of the model.
 */
public final class TokenizeRoute implements ApiRoute {
  private final ModelCatalog models;

  public TokenizeRoute(ModelCatalog models) {
    this.models = models;
  }

  @Override
  public Route route() {
    return path(
        "tokenize",
        () ->
            post(
                () ->
                    JsonBodies.entity(
                        TokenizeRequest.class,
                        request -> {
                          ServedModel model = models.resolve(request.model());
                          // validated, and within a message's bound, before a worker is asked
                          Function<ActorRef<TokenizeReply>, Tokenize> command = toCommand(request);
                          models
                              .replicas()
                              .bound()
                              .check(
                                  command.apply(models.system().ignoreRef()),
                                  "Tokenize less text per request.");
                          return completeWithFuture(
                              Stages.on(
                                      models.system(),
                                      AskPattern.<Command, TokenizeReply>ask(
                                          models.replicas().any(model),
                                          command::apply,
                                          models.askTimeout(),
                                          models.system().scheduler()))
                                  .handle(
                                      (reply, error) -> {
                                        if (error != null)
                                          throw WorkerReplies.toApiException(error);
                                        if (reply instanceof Rejected r)
                                          throw WorkerReplies.toApiException(r);
                                        Tokenized t = (Tokenized) reply;
                                        return JsonBodies.response(
                                            StatusCodes.OK,
                                            new TokenizeResponse(
                                                t.count(),
                                                t.maxModelLen(),
                                                t.tokens(),
                                                t.tokenStrs()));
                                      }));
                        })));
  }

  /** Validates {@code r}; the command it asks for, given where the reply goes. */
  private static Function<ActorRef<TokenizeReply>, Tokenize> toCommand(TokenizeRequest r) {
    if ((r.prompt() == null) == (r.messages() == null))
      throw ApiException.badRequest(
          "Exactly one of `prompt` and `messages` is required.",
          r.prompt() == null ? "messages" : "prompt");
    boolean chat = r.messages() != null;
    boolean addGenerationPrompt = r.addGenerationPrompt() == null || r.addGenerationPrompt();
    boolean continueFinal = r.continueFinalMessage() != null && r.continueFinalMessage();
    if (chat && continueFinal && addGenerationPrompt)
      throw ApiException.badRequest(
          "Cannot set both `continue_final_message` and `add_generation_prompt` to True.",
          "continue_final_message");
    if (chat) {
      if (r.messages().isEmpty())
        throw ApiException.badRequest("`messages` must contain at least one message.", "messages");
      ChatRequestMapper.limit(r.messages().size(), RequestLimits.MESSAGES, "messages", "messages");
      ChatRequestMapper.checkTemplateKwargs(r.chatTemplateKwargs());
      for (int i = 0; i < r.messages().size(); i++)
        if (r.messages().get(i) == null || !(r.messages().get(i).get("role") instanceof String))
          throw ApiException.badRequest(
              "Each message needs a `role` string.", "messages[" + i + "].role");
    }
    if (r.tools() != null)
      ChatRequestMapper.limit(r.tools().size(), RequestLimits.TOOLS, "tools", "tools");
    // vLLM: the template brings its own BOS, so chat defaults to false; plain prompts to true.
    boolean addSpecial = r.addSpecialTokens() != null ? r.addSpecialTokens() : !chat;
    boolean generationPrompt = chat && addGenerationPrompt, continueLast = chat && continueFinal;
    boolean tokenStrs = r.returnTokenStrs() != null && r.returnTokenStrs();
    return replyTo ->
        new Tokenize(
            r.messages(),
            r.prompt(),
            r.tools(),
            generationPrompt,
            continueLast,
            addSpecial,
            r.chatTemplate(),
            r.chatTemplateKwargs(),
            tokenStrs,
            replyTo);
  }
}
