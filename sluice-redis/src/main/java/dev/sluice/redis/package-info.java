/**
 * The Redis store: one Lua script call per decision on Redis time, standalone, Sentinel or
 * Cluster, through Lettuce. See {@link dev.sluice.redis.RedisStore} and {@code docs/operations.md}.
 */
package dev.sluice.redis;
