package dev.troupe.gateway.http;

import java.time.Duration;
import java.util.Optional;
import java.util.Queue;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.pekko.Done;
import org.apache.pekko.NotUsed;
import org.apache.pekko.actor.Cancellable;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.http.javadsl.model.AttributeKey;
import org.apache.pekko.http.javadsl.model.HttpEntities;
import org.apache.pekko.http.javadsl.model.HttpEntity;
import org.apache.pekko.http.javadsl.model.HttpRequest;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.model.ResponseEntity;
import org.apache.pekko.http.javadsl.server.Route;
import org.apache.pekko.stream.Attributes;
import org.apache.pekko.stream.FlowShape;
import org.apache.pekko.stream.Inlet;
import org.apache.pekko.stream.KillSwitches;
import org.apache.pekko.stream.Outlet;
import org.apache.pekko.stream.SharedKillSwitch;
import org.apache.pekko.stream.javadsl.Flow;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.stream.stage.AbstractInHandler;
import org.apache.pekko.stream.stage.AbstractOutHandler;
import org.apache.pekko.stream.stage.AsyncCallback;
import org.apache.pekko.stream.stage.GraphStage;
import org.apache.pekko.stream.stage.GraphStageLogic;
import org.apache.pekko.util.ByteString;

/**
 * The HTTP API's connections as its routes see them: each request carries its {@link Connection},
 * which tells a route when the client has closed it ({@link Connection#closed()}) and lets a route
 * keep it open while a long answer is computed ({@link Connection#holdOpenUntil}).
 *
 * <p>Why: a non-streaming chat completion may take minutes and must end with its real status (a 5xx
 * when its worker is lost for good, never a 200 with an error body), so nothing can be written
 * before it is done. Pekko's {@code idle-timeout} counts silence in both directions, so it would
 * close such a connection; and a client that gave up would not be noticed until the end. Instead,
 * as uvicorn does for vLLM, the idle timeout here applies only between requests: from a request's
 * arrival until its response has been written to the end (a strict one when it is emitted, a
 * streamed one when its body ends) the connection is in use, however silent — a stream waiting for
 * its first event or stalled while its request migrates included. (Shutting the connection's
 * response stream while a response was pending or streaming would close the socket without a
 * response, or right after one that the client then reuses for its next request: a client sees a
 * connection closed with no bytes either way.) A client closing its side of the connection (its
 * socket's FIN, seen as the end of the connection's request stream) is reported at once, so the
 * route cancels the generation. What bounds a request's wait is the route's: the chat route's owner
 * answers 503 when no worker has started it within the migration deadline.
 *
 * <p>The same bookkeeping counts the server's connections and responses in flight ({@link
 * ResponsesInFlight}), and drains a connection: once the server drains, each connection closes
 * itself after its responses in flight, streamed bodies to their last byte ({@link DrainGate}), so
 * that a draining gateway can wait for them ({@link GatewayServer#terminate}). Pekko HTTP's own
 * graceful termination aborts a connection whose response has begun at once, which would cut a
 * stream mid-answer, or the tail of one still in the socket's buffers.
 *
 * <p>Installed by {@link GatewayServer}, which turns Pekko's own idle timeout off.
 */
public final class ClientConnections {
  private static final AttributeKey<Connection> KEY =
      AttributeKey.create("troupe-client-connection", Connection.class);

  private ClientConnections() {}

  /** The connection {@code request} arrived on; empty when the server was bound otherwise. */
  public static Optional<Connection> of(HttpRequest request) {
    return request.getAttribute(KEY);
  }

  /** One client connection. Thread-safe. */
  public static final class Connection {
    private final CompletableFuture<Done> closed = new CompletableFuture<>();
    private final AtomicInteger held = new AtomicInteger();
    private final AtomicLong lastActivity = new AtomicLong(System.nanoTime());
    private final Set<Runnable> onClose = ConcurrentHashMap.newKeySet();
    // requests that reached the routes; the drain gate compares it with the responses it passed
    private final AtomicInteger arrived = new AtomicInteger();
    // streamed bodies begun and not yet ended
    private final AtomicInteger streaming = new AtomicInteger();
    private volatile boolean draining;
    private volatile Runnable wakeGate;

    /** Completes when the client has closed the connection (or it failed). */
    public CompletionStage<Done> closed() {
      return closed.copy();
    }

    /**
     * Runs {@code action} if the client closes the connection before {@code until} completes (at
     * once if it is closed already); forgotten once {@code until} completes, so a long-lived
     * connection does not collect the callbacks of its past requests.
     */
    public void onCloseUntil(CompletionStage<?> until, Runnable action) {
      if (closed.isDone()) {
        action.run();
        return;
      }
      onClose.add(action);
      until.whenComplete((r, e) -> onClose.remove(action));
      if (closed.isDone() && onClose.remove(action)) action.run(); // closed meanwhile
    }

    private void close() {
      closed.complete(Done.getInstance());
      for (Runnable r : onClose) if (onClose.remove(r)) r.run();
    }

    /**
     * Keeps the connection open, however long it stays silent, until {@code response} completes;
     * returns it.
     */
    public <T> CompletionStage<T> holdOpenUntil(CompletionStage<T> response) {
      held.incrementAndGet();
      return response.whenComplete(
          (r, e) -> {
            touch();
            held.decrementAndGet();
          });
    }

    void touch() {
      lastActivity.set(System.nanoTime());
    }

    /**
     * The server drains: the connection closes once no response is in flight on it (a streamed one
     * after its last chunk), flushing what it has written first.
     */
    void drain() {
      draining = true;
      wakeGate();
    }

    private void wakeGate() {
      Runnable wake = wakeGate;
      if (wake != null) wake.run();
    }

    /** Whether the drain gate may close: every request's response passed, no body streaming. */
    private boolean quiet(int passed) {
      return draining && passed >= arrived.get() && streaming.get() == 0;
    }

    boolean idleLongerThan(Duration timeout) {
      return held.get() == 0 && System.nanoTime() - lastActivity.get() > timeout.toNanos();
    }
  }

  /**
   * The per-connection handler of {@code route}: materialized once per connection by {@code
   * bindFlow}, it attaches the {@link Connection} to each request, closes the connection after
   * {@code idleTimeout} between requests (none pending or being written), and completes {@link
   * Connection#closed()} when the client's side ends.
   */
  public static Flow<HttpRequest, HttpResponse, NotUsed> handler(
      Route route, ActorSystem<?> system, Duration idleTimeout) {
    Flow<HttpRequest, HttpResponse, NotUsed> routes = route.flow(system);
    ResponsesInFlight server = ResponsesInFlight.get(system);
    Duration tick =
        idleTimeout.dividedBy(4).compareTo(Duration.ofSeconds(1)) < 0
            ? Duration.ofSeconds(1)
            : idleTimeout.dividedBy(4);
    return Flow.<HttpRequest, HttpResponse, NotUsed>fromMaterializer(
            (mat, attributes) -> {
              Connection c = new Connection();
              server.opened(c);
              // responses in flight on this connection, in request order (HTTP/1.1 answers in
              // order): each ends when its response is written to the end
              Queue<Runnable> open = new ConcurrentLinkedQueue<>();
              SharedKillSwitch idle = KillSwitches.shared("idle-client-connection");
              Cancellable check =
                  mat.scheduleWithFixedDelay(
                      scala.concurrent.duration.FiniteDuration.fromNanos(tick.toNanos()),
                      scala.concurrent.duration.FiniteDuration.fromNanos(tick.toNanos()),
                      () -> {
                        if (c.idleLongerThan(idleTimeout)) idle.shutdown();
                      });
              return Flow.of(HttpRequest.class)
                  .watchTermination(
                      (m, done) -> {
                        Stages.on(system, done)
                            .whenComplete(
                                (ok, error) -> {
                                  check.cancel();
                                  c.close();
                                });
                        return m;
                      })
                  .map(
                      r -> {
                        c.touch();
                        c.held.incrementAndGet(); // until its response is written (withProgress)
                        c.arrived.incrementAndGet();
                        open.add(server.begin());
                        return r.addAttribute(KEY, c);
                      })
                  .via(routes)
                  .map(r -> withProgress(r, c, open.poll(), server.draining(), system))
                  .via(Flow.fromGraph(new DrainGate(c)))
                  .via(idle.flow())
                  .watchTermination(
                      (m, done) -> {
                        // a connection gone before answering: its requests are no longer in flight
                        Stages.on(system, done)
                            .whenComplete(
                                (ok, error) -> {
                                  for (Runnable end; (end = open.poll()) != null; ) end.run();
                                });
                        return m;
                      });
            })
        .mapMaterializedValue(f -> NotUsed.getInstance());
  }

  /**
   * Passes a connection's responses through; once its connection drains ({@link Connection#drain}),
   * every request that reached the routes has had its response passed, and no body is streaming
   * (its last chunk has gone down to the TCP stage), completes the response stream. Pekko HTTP then
   * ends the connection: its TCP stage closes the socket once the writes it holds are done, and the
   * kernel sends what the socket buffer holds before the FIN; the request stream ends, which
   * completes {@link Connection#closed()}. Completing any earlier — while a body streams — would
   * close the socket under the rest of that body (Pekko's one-to-one guard cancels the request side
   * with the response side, and the TCP stage closes on that unless a write is under way).
   * Responses that come after are discarded: their requests arrived as the connection closed, as on
   * any idle connection a server closes.
   */
  private static final class DrainGate extends GraphStage<FlowShape<HttpResponse, HttpResponse>> {
    private final Inlet<HttpResponse> in = Inlet.create("DrainGate.in");
    private final Outlet<HttpResponse> out = Outlet.create("DrainGate.out");
    private final FlowShape<HttpResponse, HttpResponse> shape = FlowShape.of(in, out);
    private final Connection connection;

    DrainGate(Connection connection) {
      this.connection = connection;
    }

    @Override
    public FlowShape<HttpResponse, HttpResponse> shape() {
      return shape;
    }

    @Override
    public GraphStageLogic createLogic(Attributes attributes) {
      return new GraphStageLogic(shape) {
        private int passed;

        {
          setHandler(
              in,
              new AbstractInHandler() {
                @Override
                public void onPush() {
                  HttpResponse r = grab(in);
                  if (isClosed(out)) {
                    r.discardEntityBytes(materializer());
                    pull(in);
                    return;
                  }
                  passed++;
                  push(out, r);
                  closeIfDone();
                }
              });
          setHandler(
              out,
              new AbstractOutHandler() {
                @Override
                public void onPull() {
                  if (!hasBeenPulled(in)) pull(in);
                }
              });
        }

        @Override
        public void preStart() {
          AsyncCallback<Done> wake = createAsyncCallback(d -> closeIfDone());
          connection.wakeGate = () -> wake.invoke(Done.getInstance());
          closeIfDone(); // drained before this stage started
        }

        private void closeIfDone() {
          if (isClosed(out) || !connection.quiet(passed)) return;
          complete(out);
          // keep taking the request stream's responses until it ends with the socket
          if (!isClosed(in) && !hasBeenPulled(in)) pull(in);
        }
      };
    }
  }

  /**
   * Ends the hold its request took when the response is written: a strict one now, a streamed one
   * when its body ends (completed, failed or cancelled). Each chunk counts as activity.
   *
   * @param inFlight ends the response's place among the server's responses in flight
   * @param draining the server is draining: the response closes its connection
   */
  private static HttpResponse withProgress(
      HttpResponse response,
      Connection c,
      Runnable inFlight,
      boolean draining,
      ActorSystem<?> system) {
    c.touch();
    if (draining)
      response =
          response.addHeader(
              org.apache.pekko.http.javadsl.model.headers.Connection.create("close"));
    ResponseEntity entity = response.entity();
    if (entity.isStrict()) {
      c.held.decrementAndGet();
      if (inFlight != null) inFlight.run();
      return response;
    }
    c.streaming.incrementAndGet();
    Source<ByteString, ?> data =
        entity
            .getDataBytes()
            .map(
                b -> {
                  c.touch();
                  return b;
                })
            .watchTermination(
                (m, done) -> {
                  Stages.on(system, done)
                      .whenComplete(
                          (ok, error) -> {
                            c.touch();
                            c.held.decrementAndGet();
                            if (inFlight != null) inFlight.run();
                            c.streaming.decrementAndGet();
                            if (c.draining) c.wakeGate();
                          });
                  return m;
                });
    if (entity instanceof HttpEntity.Chunked)
      return response.withEntity(HttpEntities.createChunked(entity.getContentType(), data));
    if (entity instanceof HttpEntity.CloseDelimited)
      return response.withEntity(HttpEntities.createCloseDelimited(entity.getContentType(), data));
    return response.withEntity(
        HttpEntities.create(
            entity.getContentType(), entity.getContentLengthOption().getAsLong(), data));
  }
}
