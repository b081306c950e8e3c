"""One pagination for every list: ``?page=N&page_size=M`` (at most 1000)."""

from rest_framework import pagination


class PageNumberPagination(pagination.PageNumberPagination):
    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 1000
