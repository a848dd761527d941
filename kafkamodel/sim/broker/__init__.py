"""The broker: its threads and costs (``server``), the leader side of produce and consumer fetch (``leader``),
fetch sessions (``sessions``), replica fetchers (``follower``), LeaderAndIsr and periodic tasks (``replica_manager``)."""
