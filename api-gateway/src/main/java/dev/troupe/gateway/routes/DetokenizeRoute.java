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
import dev.troupe.protocol.api.tokenize.DetokenizeRequest;
import dev.troupe.protocol.api.tokenize.DetokenizeResponse;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Command;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Detokenize;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.DetokenizeReply;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Detokenized;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Rejected;
import dev.troupe.protocol.cluster.RequestLimits;
import org.apache.pekko.actor.typed.javadsl.AskPattern;
import org.apache.pekko.http.javadsl.model.StatusCodes;
import org.apache.pekko.http.javadsl.server.Route;

/** {@code POST /detokenize} (vLLM's shape, outside {@code /v1}): token ids back to text. */
public final class DetokenizeRoute implements ApiRoute {
  private final ModelCatalog models;

  public DetokenizeRoute(ModelCatalog models) {
    this.models = models;
  }

  @Override
  public Route route() {
    return path(
        "detokenize",
        () ->
            post(
                () ->
                    JsonBodies.entity(
                        DetokenizeRequest.class,
                        request -> {
                          ServedModel model = models.resolve(request.model());
                          if (request.tokens() == null)
                            throw ApiException.badRequest("Field required: `tokens`.", "tokens");
                          ChatRequestMapper.limit(
                              request.tokens().size(),
                              RequestLimits.DETOKENIZE_TOKENS,
                              "tokens",
                              "ids");
                          for (int i = 0; i < request.tokens().size(); i++)
                            if (request.tokens().get(i) == null || request.tokens().get(i) < 0)
                              throw ApiException.badRequest(
                                  "Token ids must be non-negative integers.", "tokens[" + i + "]");
                          models
                              .replicas()
                              .bound()
                              .check(
                                  new Detokenize(request.tokens(), models.system().ignoreRef()),
                                  "Detokenize fewer tokens per request.");
                          return completeWithFuture(
                              Stages.on(
                                      models.system(),
                                      AskPattern.<Command, DetokenizeReply>ask(
                                          models.replicas().any(model),
                                          replyTo -> new Detokenize(request.tokens(), replyTo),
                                          models.askTimeout(),
                                          models.system().scheduler()))
                                  .handle(
                                      (reply, error) -> {
                                        if (error != null)
                                          throw WorkerReplies.toApiException(error);
                                        if (reply instanceof Rejected r)
                                          throw WorkerReplies.toApiException(r);
                                        return JsonBodies.response(
                                            StatusCodes.OK,
                                            new DetokenizeResponse(((Detokenized) reply).prompt()));
                                      }));
                        })));
  }
}
