package dev.troupe.worker;

import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.concurrent.CountDownLatch;

/**
 * A TCP relay between a decode replica and a prefill node's KV transfer server that passes the
 * first {@code k} block frames of one pull, then holds the rest: a test kills the prefill node then
 * ({@link #cut}), and the relay, seeing the prefill side's connection end, closes the decode side's
 * as the dead node's would have been. What reaches the decode side is exactly a transfer cut after
 * k blocks, whatever the socket buffers held.
 */
final class CutTransferProxy implements AutoCloseable {
  private final ServerSocket listener;
  private final String upstreamHost;
  private final int upstreamPort;
  private final int passBlocks;

  /** Counted down once {@code k} block frames reached the decode side. */
  final CountDownLatch cut = new CountDownLatch(1);

  /** Counted down once the decode side's connection is closed. */
  final CountDownLatch closed = new CountDownLatch(1);

  CutTransferProxy(String upstreamHost, int upstreamPort, int passBlocks) throws IOException {
    this.listener = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
    this.upstreamHost = upstreamHost;
    this.upstreamPort = upstreamPort;
    this.passBlocks = passBlocks;
    Thread t = new Thread(this::relayOne, "kv-cut-proxy");
    t.setDaemon(true);
    t.start();
  }

  int port() {
    return listener.getLocalPort();
  }

  private void relayOne() {
    try (Socket decode = listener.accept();
        Socket prefill = new Socket(upstreamHost, upstreamPort)) {
      Thread up = new Thread(() -> copy(decode, prefill), "kv-cut-proxy-up");
      up.setDaemon(true);
      up.start();
      DataInputStream in = new DataInputStream(prefill.getInputStream());
      OutputStream out = decode.getOutputStream();
      int blocks = 0;
      try {
        while (true) { // each frame: 4-byte big-endian length, then its payload (kind first)
          int length = in.readInt();
          byte[] payload = in.readNBytes(length);
          if (payload.length < length) break;
          if (blocks == passBlocks) continue; // held: the node dies with these in flight
          out.write(
              new byte[] {
                (byte) (length >>> 24), (byte) (length >>> 16), (byte) (length >>> 8), (byte) length
              });
          out.write(payload);
          out.flush();
          if (payload[0] == 'B' && ++blocks == passBlocks) cut.countDown();
        }
      } catch (IOException endedOrReset) {
        // the prefill side's connection ended: so does the decode side's
      }
    } catch (IOException e) {
      throw new IllegalStateException(e);
    } finally {
      closed.countDown();
      try {
        listener.close();
      } catch (IOException ignored) {
        // closing a listener that accepted its one connection
      }
    }
  }

  private static void copy(Socket from, Socket to) {
    try {
      InputStream in = from.getInputStream();
      OutputStream out = to.getOutputStream();
      in.transferTo(out);
    } catch (IOException ended) {
      // either side closed
    }
  }

  @Override
  public void close() throws IOException {
    listener.close();
  }
}
