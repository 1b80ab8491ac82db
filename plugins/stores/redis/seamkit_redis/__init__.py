"""seamkit-redis: a :class:`~seamkit._ports.StorePort` and :class:`~seamkit._ports.CheckpointPort`
on Redis (redis-py asyncio). The store class is :class:`seamkit_redis.store.RedisStore`; its
configuration is :class:`seamkit_redis.config.RedisConfig`. Importing this package is cheap."""

__all__: list[str] = []
