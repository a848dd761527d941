"""The controller: broker liveness and the controller role (``controller``), partition changes
(``replication``, whose elections are ``elections``), the registrations it believes and its LeaderAndIsr
channel (``cluster``), replica placement (``placement``)."""
