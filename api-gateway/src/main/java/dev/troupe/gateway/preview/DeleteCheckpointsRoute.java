package dev.troupe.gateway.preview;

import static org.apache.pekko.http.javadsl.server.Directives.delete;
import static org.apache.pekko.http.javadsl.server.Directives.path;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.gateway.http.ApiException;
import dev.troupe.gateway.http.ApiRoute;
import dev.troupe.gateway.http.JsonBodies;
import dev.troupe.protocol.api.preview.DeleteCheckpointsResponse;
import dev.troupe.protocol.cluster.TrainableModelProtocol;
import java.util.ArrayList;
import java.util.List;
import org.apache.pekko.http.javadsl.server.Route;

/**
 * {@code DELETE /v1/preview/models/{id}/checkpoints} with body {@code {"steps":[…]}} → {@code
 * {deleted_count, not_found_steps}}. The latest checkpoint (the one served) cannot be deleted: 400.
 */
public final class DeleteCheckpointsRoute implements ApiRoute {
  private final PreviewContext ctx;

  public DeleteCheckpointsRoute(PreviewContext ctx) {
    this.ctx = ctx;
  }

  @Override
  public Route route() {
    return path(
        PreviewPaths.member("models", "checkpoints"),
        raw ->
            delete(
                () ->
                    JsonBodies.entityOrDetail(
                        JsonNode.class,
                        body -> {
                          String id = Problems.modelId(raw);
                          List<Long> steps = steps(body);
                          return ctx.<TrainableModelProtocol.DeleteCheckpointsReply>replyFromModel(
                              id,
                              r -> new TrainableModelProtocol.DeleteCheckpoints(steps, r),
                              reply -> response(reply, id));
                        })));
  }

  private static List<Long> steps(JsonNode body) {
    Problems p = new Problems();
    JsonNode steps = body.isObject() ? body.get("steps") : null;
    List<Long> out = new ArrayList<>();
    if (!body.isObject()) {
      p.add(
          List.of("body"),
          "Input should be a valid dictionary or object to extract fields from",
          "model_attributes_type");
    } else if (steps == null) {
      p.add(List.of("body", "steps"), "Field required", "missing");
    } else if (!steps.isArray()) {
      p.add(List.of("body", "steps"), "Input should be a valid list", "list_type");
    } else {
      for (int i = 0; i < steps.size(); i++) {
        JsonNode s = steps.get(i);
        if (s.isIntegralNumber() && s.canConvertToLong()) out.add(s.longValue());
        else p.add(List.of("body", "steps", i), "Input should be a valid integer", "int_type");
      }
    }
    p.throwIfAny();
    return out;
  }

  private static DeleteCheckpointsResponse response(
      TrainableModelProtocol.DeleteCheckpointsReply reply, String id) {
    if (reply instanceof TrainableModelProtocol.CheckpointsDeleted d)
      return new DeleteCheckpointsResponse(d.deletedCount(), d.notFoundSteps());
    TrainableModelProtocol.CheckpointsDeleteRefused r =
        (TrainableModelProtocol.CheckpointsDeleteRefused) reply;
    if (r.modelMissing()) throw Problems.modelNotFound(id);
    throw ApiException.badRequest(r.message(), "steps");
  }
}
