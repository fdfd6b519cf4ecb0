package dev.sluice.redis;

import dev.sluice.quota.Quota;
import dev.sluice.quota.QuotaChange;
import dev.sluice.quota.QuotaCodec;
import dev.sluice.quota.QuotaStore;
import io.lettuce.core.RedisException;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * Quotas in Redis, beside the counters: a hash of quotas ({@code <prefix>:quotas}), a version
 * ({@code <prefix>:quotas:version}) and an audit trail ({@code <prefix>:quotas:audit}, the newest
 * {@code auditLength} changes), all under one hash tag ({@code {quotas}} by default) so that they
 * live on one node. Each change is one script: the quota, the version and the trail move
 * together, dated by Redis's {@code TIME}. Every instance's {@link dev.sluice.quota.Quotas}
 * polls the version (one {@code GET}) and reads the quotas again when it moved.
 *
 * <pre>{@code
 * QuotaStore store = RedisQuotaStore.create(redisClient.connect());
 * Quotas quotas = Quotas.of(store).refreshEvery(Duration.ofMillis(500));
 * }</pre>
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/quotas.md#in-redis-every-instance-sees-a-change">docs/quotas.md, "In Redis: every instance sees a change"</a>.
 */
public final class RedisQuotaStore implements QuotaStore {
  /** Quotas held at most by default. */
  public static final int DEFAULT_MAX_QUOTAS = 100_000;
  /** Changes the audit trail keeps by default. */
  public static final int DEFAULT_AUDIT_LENGTH = 10_000;

  private static final String CHANGE = """
      local old = redis.call('HGET', KEYS[1], ARGV[2])
      if ARGV[1] == 'put' then
        if not old and redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[6]) then
          return redis.error_reply('SLUICE_QUOTAS_FULL')
        end
        redis.call('HSET', KEYS[1], ARGV[2], ARGV[3])
      else
        if not old then
          return tonumber(redis.call('GET', KEYS[2]) or '0')
        end
        redis.call('HDEL', KEYS[1], ARGV[2])
      end
      local function esc(s)
        return (string.gsub(s, '[%%\\t\\n\\r;,]', function(c)
          return string.format('%%%02x', string.byte(c)) end))
      end
      local v = redis.call('INCR', KEYS[2])
      local t = redis.call('TIME')
      local after = ''
      if ARGV[1] == 'put' then after = esc(ARGV[3]) end
      redis.call('LPUSH', KEYS[3], table.concat({v, t[1], t[2], ARGV[4], esc(old or ''), after,
        ARGV[5]}, '\\t'))
      redis.call('LTRIM', KEYS[3], 0, tonumber(ARGV[7]) - 1)
      return v
      """;

  private static final String READ = """
      return {redis.call('GET', KEYS[2]) or '0', redis.call('HVALS', KEYS[1])}
      """;

  private final RedisCommands<String, String> redis;
  private final String[] keys;
  private final int maxQuotas;
  private final int auditLength;

  private RedisQuotaStore(RedisCommands<String, String> redis, String prefix, int maxQuotas,
      int auditLength) {
    this.redis = redis;
    this.keys = new String[] {prefix + ":quotas", prefix + ":quotas:version",
        prefix + ":quotas:audit"};
    this.maxQuotas = maxQuotas;
    this.auditLength = auditLength;
  }

  /** Quotas on {@code connection} under {@code sluice:{quotas}}, with the default bounds. */
  public static RedisQuotaStore create(StatefulRedisConnection<String, String> connection) {
    return create(connection, "sluice:{quotas}", DEFAULT_MAX_QUOTAS, DEFAULT_AUDIT_LENGTH);
  }

  /**
   * Quotas on {@code connection} under {@code prefix} (keep a hash tag in it for a Cluster), at
   * most {@code maxQuotas}, the newest {@code auditLength} changes kept.
   *
   * @throws IllegalArgumentException naming the value if the prefix is blank or a bound is below 1
   */
  public static RedisQuotaStore create(StatefulRedisConnection<String, String> connection,
      String prefix, int maxQuotas, int auditLength) {
    Objects.requireNonNull(connection, "connection");
    Objects.requireNonNull(prefix, "prefix");
    if (prefix.isBlank()) {
      throw new IllegalArgumentException("prefix must not be blank");
    }
    if (maxQuotas < 1) {
      throw new IllegalArgumentException("maxQuotas must be at least 1 but was " + maxQuotas);
    }
    if (auditLength < 1) {
      throw new IllegalArgumentException("auditLength must be at least 1 but was "
          + auditLength);
    }
    return new RedisQuotaStore(connection.sync(), prefix, maxQuotas, auditLength);
  }

  @Override
  public long version() {
    String v = redis.get(keys[1]);
    return v == null ? 0 : Long.parseLong(v);
  }

  @Override
  public Snapshot read() {
    List<Object> r = redis.eval(READ, ScriptOutputType.MULTI, keys);
    List<Quota> quotas = new ArrayList<>();
    @SuppressWarnings("unchecked")
    List<Object> lines = (List<Object>) r.get(1);
    for (Object line : lines) {
      quotas.add(QuotaCodec.decode((String) line));
    }
    return new Snapshot(Long.parseLong((String) r.get(0)), quotas);
  }

  @Override
  public long put(Quota quota, String who) {
    Objects.requireNonNull(quota, "quota");
    return change("put", QuotaCodec.target(quota.policy(), quota.key(), quota.prefix()),
        QuotaCodec.encode(quota), Objects.requireNonNull(who, "who"), quota.reason());
  }

  @Override
  public long remove(String policy, String key, boolean prefix, String who, String reason) {
    return change("remove", QuotaCodec.target(policy, key, prefix), "",
        Objects.requireNonNull(who, "who"), Objects.requireNonNull(reason, "reason"));
  }

  private long change(String op, String target, String line, String who, String reason) {
    try {
      Long v = redis.eval(CHANGE, ScriptOutputType.INTEGER, keys, op, target, line,
          QuotaCodec.escape(who), QuotaCodec.escape(reason), Integer.toString(maxQuotas),
          Integer.toString(auditLength));
      return v;
    } catch (RedisException e) {
      if (String.valueOf(e.getMessage()).contains("SLUICE_QUOTAS_FULL")) {
        throw new IllegalStateException("the store holds its most quotas (" + maxQuotas
            + "): remove one first", e);
      }
      throw e;
    }
  }

  @Override
  public List<QuotaChange> audit(int n) {
    if (n < 0) {
      throw new IllegalArgumentException("n must be zero or more but was " + n);
    }
    if (n == 0) {
      return List.of();
    }
    List<QuotaChange> out = new ArrayList<>();
    for (String entry : redis.lrange(keys[2], 0, n - 1)) {
      String[] f = entry.split("\t", -1);
      Instant at = Instant.ofEpochSecond(Long.parseLong(f[1]), Long.parseLong(f[2]) * 1000);
      out.add(QuotaCodec.decodeChange(String.join("\t", "c1", f[0], at.toString(), f[3], f[4],
          f[5], f[6])));
    }
    return out;
  }
}
