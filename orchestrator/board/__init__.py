"""The board: the projection of runs into cards (:mod:`.projection`), the cards kept in the
event log (:mod:`.cards`), the web server with the page's actions (:mod:`.server`) and the page
itself (``static/``: plain JavaScript modules). A surface: it stands on the engine and the core.
The package imports no web server: ``ringleader run`` keeps its runs' cards without serving."""

from orchestrator.board.cards import CardKeeper as CardKeeper
from orchestrator.board.projection import Board as Board
from orchestrator.board.projection import BoardColumn as BoardColumn
from orchestrator.board.projection import Card as Card
