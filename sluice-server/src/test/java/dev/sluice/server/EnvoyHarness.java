package dev.sluice.server;

import dev.sluice.RateLimiter;
import dev.sluice.Sluice;
import dev.sluice.testkit.ManualClock;
import io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The Envoy service in process, on in-memory limiters with a manual clock and a manual wall
 * clock, answering as over the wire (the same generated messages), without sleeps.
 */
final class EnvoyHarness {
  /** 2026-11-25T00:00:10Z: ten seconds into a calendar minute, hour and day. */
  static final long START_MILLIS = 1_795_564_810_000L;

  final ManualClock clock = new ManualClock();
  final AtomicLong wallMillis = new AtomicLong(START_MILLIS);
  final Metrics metrics = new Metrics();
  final EnvoyService service;

  EnvoyHarness(EnvoyConfig config, EnvoyService.Settings settings) {
    EnvoyService.Settings s = new EnvoyService.Settings(settings.overrides(), settings.headers(),
        settings.shadowMode(), settings.algorithm(), wallMillis::get, settings.responseMetadata(),
        settings.quotaMode());
    this.service = new EnvoyService(config,
        (name, limit) -> asSharedStore(Sluice.builder().limits(limit).clock(clock).build()),
        metrics,
        1_000_000_000L, name -> null, s);
  }

  /** An in-memory limiter that refuses, as a shared store does, a key a store cannot hold. */
  static RateLimiter asSharedStore(RateLimiter limiter) {
    return (RateLimiter) java.lang.reflect.Proxy.newProxyInstance(
        RateLimiter.class.getClassLoader(), new Class<?>[] {RateLimiter.class},
        (proxy, method, args) -> {
          if (args != null && args.length > 0 && args[0] instanceof String key) {
            dev.sluice.internal.StoreKeys.check(key);
          }
          try {
            return method.invoke(limiter, args);
          } catch (java.lang.reflect.InvocationTargetException e) {
            throw e.getCause();
          }
        });
  }

  /** A harness over test resources {@code envoy/cases/<name>}, loaded with these settings. */
  static EnvoyHarness of(EnvoyConfig.Settings load, EnvoyService.Settings serve,
      String... resources) throws ConfigException {
    return new EnvoyHarness(EnvoyConfig.parse(texts(resources), load), serve);
  }

  static EnvoyHarness of(String... resources) throws ConfigException {
    return of(EnvoyConfig.Settings.of(1_000_000_000L), EnvoyService.Settings.defaults(),
        resources);
  }

  static Map<String, String> texts(String... resources) {
    Map<String, String> texts = new LinkedHashMap<>();
    for (String r : resources) {
      try (InputStream in = EnvoyHarness.class.getResourceAsStream("/envoy/cases/" + r)) {
        if (in == null) {
          throw new IllegalArgumentException("no test resource envoy/cases/" + r);
        }
        texts.put(r, new String(in.readAllBytes(), StandardCharsets.UTF_8));
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }
    return texts;
  }

  static RateLimitDescriptor descriptor(String... keyValues) {
    RateLimitDescriptor.Builder b = RateLimitDescriptor.newBuilder();
    for (int i = 0; i < keyValues.length; i += 2) {
      b.addEntries(RateLimitDescriptor.Entry.newBuilder().setKey(keyValues[i])
          .setValue(keyValues[i + 1]));
    }
    return b.build();
  }

  /** The answer to one request, as a client gets it; an error status is thrown. */
  RateLimitResponse ask(RateLimitRequest request) {
    return answer(service, request);
  }

  /** {@code service}'s answer to one request, as a client gets it; an error status is thrown. */
  static RateLimitResponse answer(EnvoyService service, RateLimitRequest request) {
    AtomicReference<Object> got = new AtomicReference<>();
    service.shouldRateLimit(request, new StreamObserver<>() {
      @Override
      public void onNext(RateLimitResponse value) {
        got.set(value);
      }

      @Override
      public void onError(Throwable t) {
        got.set(t);
      }

      @Override
      public void onCompleted() {}
    });
    Object o = got.get();
    if (o instanceof StatusRuntimeException e) {
      throw e;
    }
    if (o == null) {
      throw new AssertionError("no answer");
    }
    return (RateLimitResponse) o;
  }

  RateLimitResponse ask(String domain, int hits, RateLimitDescriptor... descriptors) {
    RateLimitRequest.Builder r = RateLimitRequest.newBuilder().setDomain(domain)
        .setHitsAddend(hits);
    for (RateLimitDescriptor d : descriptors) {
      r.addDescriptors(d);
    }
    return ask(r.build());
  }

  /** One descriptor's status, asked alone with one hit. */
  RateLimitResponse.DescriptorStatus one(String domain, String... keyValues) {
    return ask(domain, 1, descriptor(keyValues)).getStatuses(0);
  }
}
