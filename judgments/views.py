from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from .selectors import collections_with_progress


@login_required
def home(request: HttpRequest) -> HttpResponse:
    return render(request, "judgments/home.html", {"collections": collections_with_progress()})
