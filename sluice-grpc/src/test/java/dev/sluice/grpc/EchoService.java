package dev.sluice.grpc;

import io.grpc.BindableService;
import io.grpc.MethodDescriptor;
import io.grpc.ServerServiceDefinition;
import io.grpc.Status;
import io.grpc.stub.ServerCalls;
import io.grpc.stub.StreamObserver;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A gRPC service with strings for messages (no generated code): {@code test.Echo/Say} (unary:
 * "fail:CODE" answers that status, "once:ID" fails with UNAVAILABLE the first time, "hold"
 * waits for {@link #release}), {@code test.Echo/Count}
 * (server streaming: n messages, waiting for {@link #release} before the last) and {@code
 * test.Echo/Chat} (bidirectional: echoes each message until the client completes). It counts the
 * calls running at once.
 */
final class EchoService implements BindableService {
  static final MethodDescriptor.Marshaller<String> STRING = new MethodDescriptor.Marshaller<>() {
    @Override
    public InputStream stream(String value) {
      return new ByteArrayInputStream(value.getBytes(StandardCharsets.UTF_8));
    }

    @Override
    public String parse(InputStream stream) {
      try {
        return new String(stream.readAllBytes(), StandardCharsets.UTF_8);
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }
  };
  static final MethodDescriptor<String, String> SAY = method("Say",
      MethodDescriptor.MethodType.UNARY);
  static final MethodDescriptor<String, String> COUNT = method("Count",
      MethodDescriptor.MethodType.SERVER_STREAMING);
  static final MethodDescriptor<String, String> CHAT = method("Chat",
      MethodDescriptor.MethodType.BIDI_STREAMING);

  final AtomicInteger running = new AtomicInteger();
  final AtomicInteger mostRunning = new AtomicInteger();
  final AtomicInteger calls = new AtomicInteger();
  /** The "once:" messages that have failed their first time. */
  final java.util.Set<String> failedOnce = java.util.concurrent.ConcurrentHashMap.newKeySet();
  volatile CountDownLatch release = new CountDownLatch(0);

  private static MethodDescriptor<String, String> method(String name,
      MethodDescriptor.MethodType type) {
    return MethodDescriptor.<String, String>newBuilder().setType(type)
        .setFullMethodName(MethodDescriptor.generateFullMethodName("test.Echo", name))
        .setRequestMarshaller(STRING).setResponseMarshaller(STRING).build();
  }

  private void enter() {
    calls.incrementAndGet();
    int now = running.incrementAndGet();
    mostRunning.accumulateAndGet(now, Math::max);
  }

  private void await() {
    try {
      release.await(30, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  @Override
  public ServerServiceDefinition bindService() {
    return ServerServiceDefinition.builder("test.Echo")
        .addMethod(SAY, ServerCalls.asyncUnaryCall((String m, StreamObserver<String> out) -> {
          enter();
          try {
            if (m.equals("hold")) {
              await();
            }
            if (m.startsWith("once:") && failedOnce.add(m)) {
              out.onError(Status.UNAVAILABLE.withDescription("transient").asException());
              return;
            }
            if (m.startsWith("fail:")) {
              out.onError(Status.fromCode(Status.Code.valueOf(m.substring(5))).asException());
              return;
            }
            out.onNext(m);
            out.onCompleted();
          } finally {
            running.decrementAndGet();
          }
        }))
        .addMethod(COUNT, ServerCalls.asyncServerStreamingCall(
            (String m, StreamObserver<String> out) -> {
              enter();
              try {
                int n = Integer.parseInt(m);
                for (int i = 1; i < n; i++) {
                  out.onNext(Integer.toString(i));
                }
                await();
                out.onNext(Integer.toString(n));
                out.onCompleted();
              } finally {
                running.decrementAndGet();
              }
            }))
        .addMethod(CHAT, ServerCalls.<String, String>asyncBidiStreamingCall(replies -> {
          enter();
          return new StreamObserver<String>() {
            @Override
            public void onNext(String value) {
              replies.onNext(value);
            }

            @Override
            public void onError(Throwable t) {
              running.decrementAndGet();
            }

            @Override
            public void onCompleted() {
              running.decrementAndGet();
              replies.onCompleted();
            }
          };
        }))
        .build();
  }
}
