"""Hosts' and chips' health: checks (a host checked before a run), identity (what it says of
itself against the inventory and its pins; chips set aside), states (HostHealth and its
values), quarantine (hosts and chips kept out until a check passes), table (`farm hosts`)."""
