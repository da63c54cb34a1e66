package dev.troupe.gateway.preview;

import static org.apache.pekko.http.javadsl.server.Directives.onSuccess;
import static org.apache.pekko.http.javadsl.server.Directives.path;
import static org.apache.pekko.http.javadsl.server.Directives.post;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.gateway.http.ApiException;
import dev.troupe.gateway.http.ApiRoute;
import dev.troupe.gateway.http.JsonBodies;
import dev.troupe.protocol.api.preview.ModelResponse;
import dev.troupe.protocol.cluster.TrainableModelProtocol;
import dev.troupe.protocol.cluster.TrainableModelProtocol.ModelInfo;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.http.javadsl.server.Route;

/**
 * {@code POST /v1/preview/models} {@code {entity?, project, name, base_model, return_existing}}:
 * registers a trainable model (step 0 = the base model). The same (entity, project, name) with
 * {@code return_existing: true} returns the existing model; without it, 409. {@code base_model}
 * must be a served model (400 lists them). The names are journaled by the registry: text that
 * cannot be stored (a lone surrogate) is a 422 at its field, before anything is asked.
 */
public final class CreateModelRoute implements ApiRoute {
  private final PreviewContext ctx;

  public CreateModelRoute(PreviewContext ctx) {
    this.ctx = ctx;
  }

  @Override
  public Route route() {
    return path(
        PreviewPaths.collection("models"),
        () ->
            post(
                () ->
                    JsonBodies.entityOrDetail(
                        JsonNode.class,
                        body -> onSuccess(create(body), JsonBodies::completeJson))));
  }

  private CompletionStage<ModelResponse> create(JsonNode body) {
    Problems p = new Problems();
    if (!body.isObject()) {
      p.add(
          List.of("body"),
          "Input should be a valid dictionary or object to extract fields from",
          "model_attributes_type");
      p.throwIfAny();
    }
    String entity = optionalString(body, "entity", p);
    String project = requiredString(body, "project", p);
    String name = requiredString(body, "name", p);
    String baseModel = requiredString(body, "base_model", p);
    boolean returnExisting = false;
    JsonNode re = body.get("return_existing");
    if (re != null && !re.isNull()) {
      if (re.isBoolean()) returnExisting = re.booleanValue();
      else
        p.add(List.of("body", "return_existing"), "Input should be a valid boolean", "bool_type");
    }
    p.throwIfAny();
    List<String> served = ctx.servedModels();
    if (!served.contains(baseModel)) {
      throw ApiException.badRequest(
          "base_model '"
              + baseModel
              + "' is not served here; served models: "
              + String.join(", ", served),
          "base_model");
    }
    String owner = entity == null || entity.isBlank() ? ctx.defaultEntity() : entity;
    boolean existingOk = returnExisting;
    return ctx.<TrainableModelProtocol.RegisterReply>askRegistry(
            r ->
                new TrainableModelProtocol.Register(
                    UUID.randomUUID().toString(), owner, project, name, baseModel, r))
        .thenCompose(
            reply -> {
              ModelInfo info;
              if (reply instanceof TrainableModelProtocol.Registered reg) {
                info = reg.info();
              } else {
                info = ((TrainableModelProtocol.NameTaken) reply).existing();
                if (!existingOk) {
                  throw new ApiException(
                      409,
                      "ConflictError",
                      "A model named "
                          + owner
                          + "/"
                          + project
                          + "/"
                          + name
                          + " already exists (id "
                          + info.id()
                          + "); send return_existing: true to get it.",
                      "name");
                }
              }
              // Idempotent: also repairs a registration whose entity creation was interrupted.
              return ctx.<TrainableModelProtocol.ModelReply>askModel(
                      info.id(), r -> new TrainableModelProtocol.Create(info, r))
                  .thenApply(created -> toResponse(created, info.id()));
            });
  }

  static ModelResponse toResponse(TrainableModelProtocol.ModelReply reply, String id) {
    if (reply instanceof TrainableModelProtocol.ModelFound f) return of(f.info());
    if (reply instanceof TrainableModelProtocol.ModelRejected r)
      throw new ApiException(409, "ConflictError", r.message(), null);
    throw Problems.modelNotFound(id);
  }

  static ModelResponse of(ModelInfo i) {
    return new ModelResponse(i.id(), i.entity(), i.project(), i.name(), i.baseModel(), i.runId());
  }

  private static String requiredString(JsonNode body, String field, Problems p) {
    JsonNode v = body.get(field);
    if (v == null) {
      p.add(List.of("body", field), "Field required", "missing");
      return null;
    }
    if (!v.isTextual()) {
      p.add(List.of("body", field), "Input should be a valid string", "string_type");
      return null;
    }
    return storable(v.textValue(), field, p);
  }

  private static String storable(String s, String field, Problems p) {
    if (Text.loneSurrogate(s) < 0) return s;
    p.add(List.of("body", field), Text.UNSTORABLE, Text.UNSTORABLE_TYPE);
    return null;
  }

  private static String optionalString(JsonNode body, String field, Problems p) {
    JsonNode v = body.get(field);
    if (v == null || v.isNull()) return null;
    if (!v.isTextual()) {
      p.add(List.of("body", field), "Input should be a valid string", "string_type");
      return null;
    }
    return storable(v.textValue(), field, p);
  }
}
